"""DP-SGD probes on opacus: three threat models of one training (``dpfed.dpsgd``).

- ``dpsgd-all-iterates``: the white-box adversary of Nasr et al. 2023 sees every iterate and inserts a
  Dirac gradient canary (the clip norm times a unit vector on a coordinate no real example touches).
  Each step's update of that coordinate, read from the parameters opacus produced, is one release of a
  Poisson-subsampled Gaussian; the score is the summed per-step log-likelihood ratio of the described
  mechanism (``log_mixture_ratio``), the Neyman-Pearson test for it.
- ``dpsgd-last-iterate``: the same canary, only the final parameters seen; score: the canary
  coordinate's final value (the likelihood ratio is increasing in it).
- ``dpsgd-final-model``: the final model only, with an input-space canary (a crafted example in the
  training set); score: minus the final model's loss on it. The model's initialisation is the same in
  every trial (DP-SGD's guarantee holds for any fixed initialisation; a random one only adds variance to
  the score).

Trial axis: a gradient-canary run trains once with ``canaries_per_run`` canary coordinates (world 1:
every canary's example is in the data set, world 0: none). The coordinates are independent and each is
distributed as in a run with that canary alone (see ``dpfed.dpsgd.canaries``), so one opacus run gives
that many independent trials of the membership game. The final-model probe trains one model per trial.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import numpy as np

from accounting.errors import ConfigurationError, require_number
from attacks.probes.base import Probe, accountant_epsilon, check_world, log_mixture_ratio, module_hash

PLANTED_BUGS = {"none": 1.0, "half-noise": 0.5}  # planted bug -> factor on the noise opacus adds


def _no_context():
    import contextlib

    return contextlib.nullcontext()


def _seeds(rng, count: int) -> list[int]:
    """Training seeds drawn on the host (the same runs on every backend and device)."""
    from attacks.backend import host_generator

    return [int(s) for s in host_generator(rng).integers(0, 2**62, size=count)]


@dataclass
class _DpsgdProbe(Probe):
    """Common parameters: the bundled example (``setup`` "") or a user's ``"module:function"`` returning
    a ``dpfed.dpsgd.DpsgdSetup`` (the privacy parameters below then override the user's only if given)."""

    noise_multiplier: float | None = None
    sample_rate: float | None = None
    epochs: int | None = None
    clip: float | None = None
    learning_rate: float | None = None
    setup: str = ""
    planted_bug: str = "none"
    delta: float = 1e-5
    input_key: str | list | None = None  # opacus-check's dict only: the keys of dict batches (its input_key,
    label_key: str | None = None  # label_key; default: the set-up dict's, else inferred)

    backends = ("numpy", "torch")  # torch: opacus trains on ``device`` (--backend torch --device cuda)
    device = "cpu"  # set by ``attacks.backend.on_backend`` (a class attribute, not a configuration field)

    def __post_init__(self):
        if self.planted_bug not in PLANTED_BUGS:
            raise ConfigurationError("planted_bug", f"choose from {', '.join(PLANTED_BUGS)}, got {self.planted_bug!r}")
        self.delta = require_number("delta", self.delta, low=0, high=1, low_open=True, high_open=True)
        self.default_delta = self.delta
        self.training_setup()  # validate now: a bad parameter is a configuration error before any run

    def training_setup(self):
        """The ``DpsgdSetup`` this probe trains (built afresh: setups hold lambdas and are not pickled)."""
        from dpfed.dpsgd import breast_cancer_setup

        overrides = {k: getattr(self, k) for k in ("noise_multiplier", "sample_rate", "epochs", "clip",
                                                   "learning_rate") if getattr(self, k) is not None}
        keys = {k: getattr(self, k) for k in ("input_key", "label_key") if getattr(self, k) is not None}
        if keys:  # checked again below: only opacus-check's dict has batches with keys
            not_dict = ConfigurationError(next(iter(keys)), "names a key of the batches of opacus-check's dict (the "
                                          "user's own data loader); the bundled example and a DpsgdSetup have none")
        if not self.setup:
            if keys:
                raise not_dict
            return breast_cancer_setup(**overrides)
        from attacks.probes.dpsgd_user import OpacusRun, is_file_spec, load_user_setup, with_batch_keys

        if is_file_spec(self.setup):  # "path/file.py:function": a DpsgdSetup or opacus-check's dict
            built = load_user_setup(self.setup)
            if isinstance(built, OpacusRun):
                if overrides:
                    raise ConfigurationError(next(iter(overrides)), "the user's own opacus objects fix the privacy "
                                             "parameters; change them in the set-up file")
                return with_batch_keys(built, **keys)
            if keys:
                raise not_dict
            for key, value in overrides.items():
                setattr(built, key, value)
            built.__post_init__()
            return built
        from attacks.probes.user import check_spec, user_code_path

        if keys:
            raise not_dict
        module_name, function_name = check_spec(self.setup).split(":")
        user_code_path()
        try:
            factory = getattr(importlib.import_module(module_name), function_name)
        except (ImportError, AttributeError) as exc:
            raise ConfigurationError("setup", f"cannot import {self.setup!r}: {exc}") from None
        built = factory()
        for key, value in overrides.items():
            setattr(built, key, value)
        built.__post_init__()
        return built

    def mechanism(self):
        return self.training_setup().mechanism()

    def true_epsilon(self, delta: float) -> float | None:
        return accountant_epsilon(self.mechanism(), delta)

    def noise_factor(self) -> float:
        return PLANTED_BUGS[self.planted_bug]

    def provenance(self) -> dict:
        """The base provenance plus the training code (``dpfed.dpsgd``): a checkpoint written under other
        training code is not resumed."""
        import dpfed.dpsgd.canaries
        import dpfed.dpsgd.data
        import dpfed.dpsgd.planted
        import dpfed.dpsgd.train  # noqa: F401  (imports the set-up module too)

        names = ("dpfed.dpsgd.canaries", "dpfed.dpsgd.data", "dpfed.dpsgd.planted", "dpfed.dpsgd.setup",
                 "dpfed.dpsgd.train")
        out = {**super().provenance(), **{name: module_hash(name) for name in names}}
        if self.setup:  # the user's set-up code: a checkpoint written under another version is not resumed
            import hashlib
            from pathlib import Path

            from attacks.probes.dpsgd_user import is_file_spec

            if is_file_spec(self.setup):
                path = Path(self.setup.rpartition(":")[0] if ":" in self.setup else self.setup)
                out["setup_file"] = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "missing"
            out["attacks.probes.dpsgd_user"] = module_hash("attacks.probes.dpsgd_user")
        return out


@dataclass
class DpsgdAllIteratesProbe(_DpsgdProbe):
    """Gradient canary, every iterate seen: summed per-step likelihood-ratio score."""

    canaries_per_run: int = 2000

    name = "dpsgd-all-iterates"
    threat_model = "all iterates (white box)"
    description = ("DP-SGD on opacus; Dirac gradient canary on its own coordinate, every step's update "
                   "read, summed subsampled-Gaussian likelihood ratio (Nasr et al. 2023)")
    batch_size = 20_000
    memory_per_trial = 40_000

    def __post_init__(self):
        self.canaries_per_run = int(require_number("canaries_per_run", self.canaries_per_run, low=1, integer=True))
        super().__post_init__()

    def checked_setup(self):
        """The set-up to train, refused (ConfigurationError) where its canaries of one run would not be
        independent trials or where it cannot run on ``device``."""
        from attacks.probes.dpsgd_user import OpacusRun, check_poisson

        setup = self.training_setup()
        if isinstance(setup, OpacusRun) and check_poisson(setup):
            raise ConfigurationError("setup", check_poisson(setup))
        if isinstance(setup, OpacusRun) and self.device != "cpu":
            raise ConfigurationError("device", "a user's own opacus objects run where the set-up put them; "
                                     "leave out --device")
        return setup

    def canary_run(self, setup, included, seed: int):
        """One opacus run with canary k's example in where ``included[k]``: (normalised per-step updates
        (steps, canaries), the ``OpacusRecord`` of what opacus's accountant was told). Our loop on a
        ``DpsgdSetup``; the user's own sampler and optimizer on opacus-check's dict."""
        from attacks.probes.dpsgd_user import OpacusRun, optimizer_gradient_canaries
        from dpfed.dpsgd.train import OpacusRecord, train_gradient_canaries

        included = np.asarray(included, dtype=bool)
        if isinstance(setup, OpacusRun):
            updates = optimizer_gradient_canaries(setup, included.size, included, seed)
            return updates, OpacusRecord(setup.noise_multiplier, setup.sample_rate, len(updates))
        run = train_gradient_canaries(setup, included.size, included, seed, getattr(self, "device", "cpu"))
        return run.normalised_updates(), run.opacus

    def updates(self, world, trials, rng) -> np.ndarray:
        """Normalised per-step canary-coordinate updates (steps, trials) from opacus runs of ``world``
        (``canary_run``: every canary in, or none)."""
        from dpfed.dpsgd.planted import scaled_noise
        from dpfed.dpsgd.train import one_thread

        present = check_world(world)
        setup = self.checked_setup()
        chunks = []
        remaining = int(trials)
        with scaled_noise(self.noise_factor()), one_thread():
            while remaining > 0:
                count = min(remaining, self.canaries_per_run)
                (seed,) = _seeds(rng, 1)
                chunks.append(self.canary_run(setup, np.full(count, bool(present)), seed)[0])
                remaining -= count
        return np.concatenate(chunks, axis=1)

    def simulated_power(self, trials, claim_epsilon, delta, confidence, probability):
        """The power of this probe's test by simulation (``attacks.probes.dpsgd_power``); a planted bug's
        probe states none (its noise is not the configured one)."""
        from attacks.probes.dpsgd_power import simulated_power

        if self.planted_bug != "none":
            return None
        return simulated_power(self, trials, claim_epsilon, delta, confidence, probability)

    def score_updates(self, updates: np.ndarray) -> np.ndarray:
        """Summed per-step log-likelihood ratios of the described mechanism (unit-variance updates whose
        mean is 1 / z when the canary was sampled)."""
        setup = self.training_setup()
        mu = 1.0 / setup.noise_multiplier
        return log_mixture_ratio(updates * mu, mu * mu, setup.sample_rate).sum(axis=0)

    def scores(self, world, trials, rng):
        return self.score_updates(self.updates(world, trials, rng))


@dataclass
class DpsgdLastIterateProbe(DpsgdAllIteratesProbe):
    """Gradient canary, final parameters only: the canary coordinate's final value."""

    name = "dpsgd-last-iterate"
    threat_model = "last iterate (white box)"
    description = ("DP-SGD on opacus; Dirac gradient canary on its own coordinate, only the final value "
                   "of that coordinate read")

    def score_updates(self, updates: np.ndarray) -> np.ndarray:
        return updates.sum(axis=0)


@dataclass
class DpsgdFinalModelProbe(_DpsgdProbe):
    """Input-space canary, final model only: minus the final model's loss on the crafted example."""

    canary_norm: float = 10.0
    trainer: str = "batched"  # "batched": many models at once (dpfed.dpsgd.batched); "opacus": one per trial

    name = "dpsgd-final-model"
    threat_model = "final model (black box)"
    description = ("DP-SGD (opacus's update; trainer 'batched': many models at once with torch.func, 'opacus': "
                   "one opacus run per trial); crafted input (large, along the data's least-variance direction, "
                   "label 1) in the training set, initialisation fixed across trials; score: minus the final "
                   "model's loss on it")
    batch_size = 2000  # models per scores call: the batched trainer trains them together (in chunks)
    memory_per_trial = 1_000_000

    def __post_init__(self):
        require_number("canary_norm", self.canary_norm, low=0, low_open=True)
        if self.trainer not in ("batched", "opacus"):
            raise ConfigurationError("trainer", f"choose batched or opacus, got {self.trainer!r}")
        super().__post_init__()

    def _batched_scores(self, setup, canary, label, present: bool, trials: int, rng) -> np.ndarray:
        """Minus each final model's loss on the canary, ``trials`` models trained at once in chunks."""
        import torch

        from dpfed.dpsgd.batched import final_models, losses_on, models_per_chunk
        from dpfed.dpsgd.train import one_thread

        device = torch.device(self.device)
        features, labels = setup.features, setup.labels
        if present:
            features = torch.cat([features, canary.reshape(1, -1).to(features.dtype)])
            labels = torch.cat([labels, label.to(labels.dtype)])
        features, labels = features.to(device), labels.to(device)
        (seed,) = _seeds(rng, 1)
        generator = torch.Generator(device=device).manual_seed(seed)
        out, done, chunk = [], 0, models_per_chunk(setup, features.shape[0])
        with one_thread() if device.type == "cpu" else _no_context():
            while done < trials:
                count = min(chunk, trials - done)
                template, params = final_models(setup, features, labels, count, generator, 0, self.noise_factor())
                out.append(-losses_on(setup, template, params, canary.to(device), label[0].to(device)).cpu().numpy())
                done += count
        return np.concatenate(out).astype(float)

    def scores(self, world, trials, rng):
        import torch

        from dpfed.dpsgd.canaries import input_canary
        from dpfed.dpsgd.planted import scaled_noise
        from dpfed.dpsgd.train import train_input_canary

        present = bool(check_world(world))
        setup = self.training_setup()
        if not hasattr(setup, "loss"):
            raise ConfigurationError("setup", "the final-model probe trains models with the per-example loss of a "
                                     "DpsgdSetup; opacus-check's dict has none")
        canary = input_canary(setup.features, self.canary_norm)
        label = torch.ones((1,) + tuple(setup.labels.shape[1:]), dtype=setup.labels.dtype)
        if self.trainer == "batched":
            return self._batched_scores(setup, canary, label, present, int(trials), rng)
        if self.device != "cpu":
            raise ConfigurationError("device", "the one-model-per-trial final-model probe trains on the cpu only; "
                                     "use trainer = 'batched' or leave out --device")
        out = np.empty(int(trials))
        with scaled_noise(self.noise_factor()):
            for i, seed in enumerate(_seeds(rng, int(trials))):
                model, _ = train_input_canary(setup, canary, label[0], present, seed, init_seed=0)
                with torch.no_grad():
                    out[i] = -float(setup.loss(model(canary[None]), label)[0])
        return out
