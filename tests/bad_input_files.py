"""Files the bad-input suite (``tests/test_bad_inputs.py``) writes into each case's working directory.

Good files first (each bad file below differs from one of them in one place), then one bad file per
kind of mistake and per kind of file: FTS run configs, PNE run configs, attack configs, user datasets,
audit configs, saved reports; and a module of misbehaving user mechanisms.
"""

from __future__ import annotations

import json

GOOD_FTS = 'algorithm = "dp-fts"\nobjective = "synthetic"\ndim = 1\nnum_agents = 3\nrounds = 2\n'
GOOD_PNE = 'objective = "garland"\nclients = 2\nhorizon = 50\n'
GOOD_ATTACK = 'probe = "gaussian"\ntrials = 200\nseed = 1\n[params]\nepsilon = 2.0\n'
GOOD_DATASETS = "without = [1.0, 2.0]\nwith = [1.0, 2.0, 3.0]\n"
GOOD_AUDIT = """title = "tiny"
seed = 1
[[target]]
name = "Gaussian"
algorithm = "mechanism"
accountants = ["exact"]
[target.parameters]
type = "gaussian"
calibration = "classic"
steps = 1
[target.claim]
epsilon = 1.0
delta = 1e-5
neighbouring = "add-remove"
unit = "one record"
[[target.probes]]
name = "gaussian"
kind = "mechanism"
trials = 200
"""

DPSGD_AUDIT = """[[target]]
name = "dicts"
algorithm = "dp-sgd"
[target.parameters]
setup = "opacus_batches.py:unknown_keys"
{extra}
[target.claim]
epsilon = 6.0
delta = 1e-5
neighbouring = "add-remove"
unit = "record"
[[target.probes]]
name = "dpsgd-all-iterates"
trials = 60
"""

USER_MECHANISMS = """
import os, sys, time
import numpy as np

def ok(dataset, rng):
    return float(len(dataset)) + rng.laplace()

def exits0(dataset, rng):
    sys.exit(0)

def exits1(dataset, rng):
    sys.exit(1)

def exits_text(dataset, rng):
    sys.exit("goodbye")

def hard_exit0(dataset, rng):
    os._exit(0)

def hard_exit1(dataset, rng):
    os._exit(1)

def segfault(dataset, rng):
    import ctypes
    ctypes.string_at(0)

def hangs(dataset, rng):
    time.sleep(600)

def raises(dataset, rng):
    raise ValueError("multi\\nline\\nmessage")

def interrupt(dataset, rng):
    raise KeyboardInterrupt

def prints(dataset, rng):
    print("chatter from the mechanism")
    return float(len(dataset)) + rng.laplace()

def nan(dataset, rng):
    return float("nan")

def text(dataset, rng):
    return "abc"

def empty(dataset, rng):
    return []

def ragged(dataset, rng):
    return np.zeros(1 + int(rng.random() < 0.5))

def wrong_batch(dataset, rng, size):
    return np.zeros(size + 1)
wrong_batch.batched = True

not_callable = 3
"""


def _replace(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def _report_text(report: dict, **changes) -> str:
    return json.dumps({**report, **changes})


def files() -> dict[str, str | bytes]:
    """All files of a case directory, by name."""
    out: dict[str, str | bytes] = {
        "fts.toml": GOOD_FTS,
        "pne.toml": GOOD_PNE,
        "attack.toml": GOOD_ATTACK,
        "ds.toml": GOOD_DATASETS,
        "audit.toml": GOOD_AUDIT,
        "umech.py": USER_MECHANISMS,
        "importexit.py": "import sys\nsys.exit(0)\n",
        "importfail.py": "raise RuntimeError('broken at import')\n",
        # opacus set-ups whose batches cannot be read (tests/opacus_setup/batch_setups.py)
        "opacus_batches.py": "from tests.opacus_setup.batch_setups import *  # noqa: F403\n",
        "audit_dpsgd_input_key.toml": DPSGD_AUDIT.replace("{extra}", "input_key = 5"),
        "audit_dpsgd_missing_key.toml": DPSGD_AUDIT.replace("{extra}", 'input_key = "image"'),
        "afile": "a regular file\n",
        "empty.toml": "",
        "syntax.toml": "rate = = 1\n",
        "binary.toml": b"\xff\xfe\x00rate = 1\n",
        "array.toml": "[[x]]\na = 1\n",
        "notjson.json": "{not json",
        "notreport.json": json.dumps({"hello": "world"}),
        "list.json": "[1, 2, 3]",
        # earlier results of `dpaudit run` variants (a rerun into "." without --force is refused)
        "fts_dp-fts_synthetic.json": "{}",
        "pne_dp-fed-pne_garland_analytic.png": "",
        "fkm_dp-fkm_linear_event.json": "{}",
        "fedzero_dp-fedzero_l2_worker-scalar.png": "",
        "duets_dp-duets_branin_agent_communication.png": "",
    }
    out.update(fts_files())
    out.update(pne_files())
    out.update(attack_files())
    out.update(dataset_files())
    out.update(audit_files())
    out.update(estimate_files())
    return out


def fts_files() -> dict[str, str]:
    g = GOOD_FTS
    return {
        "fts_unknown.toml": g + "colour = 1\n",
        "fts_misspelt.toml": g + "noise_multipler = 0.5\n",
        "fts_rate_string.toml": g + 'rate = "0.35"\n',
        "fts_rate_bool.toml": g + "rate = true\n",
        "fts_rate_list.toml": g + "rate = [0.35]\n",
        "fts_rounds_float.toml": _replace(g, "rounds = 2", "rounds = 2.5"),
        "fts_name_list.toml": g + 'name = ["a", "b"]\n',
        "fts_objective_list.toml": _replace(g, 'objective = "synthetic"', 'objective = ["a", "b"]'),
        "fts_table_value.toml": g + "[clip]\nvalue = 1\n",
        "fts_beside_table.toml": "rounds = 2\n[fts]\n" + g,
        "fts_wrapped_unknown.toml": "[fts]\n" + g + "colour = 1\n",
        "fts_algorithm_de.toml": _replace(g, 'algorithm = "dp-fts"', 'algorithm = "dp-fts-de"'),
        "fts_algorithm_bad.toml": _replace(g, 'algorithm = "dp-fts"', 'algorithm = "dp-xyz"'),
        "fts_rate_range.toml": g + "rate = 1.5\n",
        "fts_agents_zero.toml": _replace(g, "num_agents = 3", "num_agents = 0"),
        "fts_huge_rounds.toml": _replace(g, "rounds = 2", "rounds = 1000000000000"),
        "fts_landmine_path.toml": g + 'landmine_path = "x.mat"\n',
        "fts_sampling.toml": g + 'sampling = "sometimes"\n',
    }


def pne_files() -> dict[str, str]:
    g = GOOD_PNE
    return {
        "pne_unknown.toml": g + "colour = 1\n",
        "pne_misspelt.toml": g + "horizn = 100\n",
        "pne_horizon_string.toml": _replace(g, "horizon = 50", 'horizon = "50"'),
        "pne_horizon_float.toml": _replace(g, "horizon = 50", "horizon = 50.5"),
        "pne_clients_bool.toml": _replace(g, "clients = 2", "clients = true"),
        "pne_objective_list.toml": _replace(g, 'objective = "garland"', 'objective = ["a", "b"]'),
        "pne_epsilon_nonprivate.toml": g + "epsilon = 1.0\n",
        "pne_calibration_nonprivate.toml": g + 'calibration = "classic"\n',
        "pne_clients_hct.toml": _replace(g, "clients = 2\n", "") + "clients = 3\n",
        "pne_eps_string.toml": g + 'epsilon = "1"\n',
        "pne_final_upload_string.toml": g + 'final_upload = "yes"\n',
        "pne_table.toml": g + "[constants]\nk = 2\n",
        "pne_huge.toml": _replace(g, "horizon = 50", "horizon = 1000000000000"),
        "pne_rho_range.toml": g + "rho = 2.0\n",
        "pne_k_one.toml": g + "k = 1\n",
        "pne_k_huge.toml": g + "k = 1000000\n",  # a first phase of 10^12 nodes: a 7 TiB array (exit 4)
        "pne_nu1_huge.toml": g + "nu1 = 1e300\n",  # tau = 1 down to depth ~1000: 2^1000 nodes
        "pne_dash_key.toml": g + "noise-width = 0.2\n",
    }


def attack_files() -> dict[str, str]:
    g = GOOD_ATTACK
    return {
        "attack_unknown.toml": g.replace("[params]", "colour = 1\n[params]"),
        "attack_trials_beside_table.toml": 'trials = 100\n[attack]\nprobe = "gaussian"\n',
        "attack_trials_string.toml": _replace(g, "trials = 200", 'trials = "200"'),
        "attack_seed_float.toml": _replace(g, "seed = 1", "seed = 1.5"),
        "attack_methods_number.toml": g.replace("[params]", "methods = 5\n[params]"),
        "attack_probe_list.toml": _replace(g, 'probe = "gaussian"', 'probe = ["a", "b"]'),
        "attack_params_not_table.toml": 'probe = "gaussian"\nparams = 3\n',
        "attack_param_string.toml": _replace(g, "epsilon = 2.0", 'epsilon = "2"'),
        "attack_param_unknown.toml": _replace(g, "epsilon = 2.0", "epsilonn = 2.0"),
        "attack_param_bool.toml": _replace(g, "epsilon = 2.0", "epsilon = true"),
        "attack_mechanism_code.toml": 'mechanism = "shutil:rmtree"\ndatasets = "ds.toml"\n',
        "attack_function_code.toml": 'probe = "user"\n[params]\nfunction = "umech:ok"\ndatasets = "ds.toml"\n',
        "attack_executor_bad.toml": g.replace("[params]", 'executor = "cloud"\n[params]'),
        "attack_workers_inprocess.toml": g.replace("[params]", 'executor = "inprocess"\nworkers = 4\n[params]'),
        "attack_confidence_range.toml": g.replace("[params]", "confidence = 1.5\n[params]"),
        "attack_wrapped_unknown.toml": '[attack]\nprobe = "gaussian"\ncolour = 1\n',
        "attack_timeout_gaussian.toml": g.replace("[params]", "timeout = 5\n[params]"),
        "attack_timeout_param.toml": 'probe = "user"\n[params]\ntimeout = 5\n',
    }


def dataset_files() -> dict[str, str]:
    g = GOOD_DATASETS
    return {
        "ds_missing_with.toml": "without = [1.0]\n",
        "ds_extra.toml": g + "extra = 1\n",
        "ds_beside_table.toml": "without = [1.0]\n[datasets]\n" + g,
        "ds_wrapped_extra.toml": "[datasets]\n" + g + "colour = 2\n",
        "ds_wrapped_ok.toml": "[datasets]\n" + g,
    }


def audit_files() -> dict[str, str]:
    g = GOOD_AUDIT
    return {
        "audit_param_step.toml": _replace(g, "steps = 1", "step = 100"),
        "audit_param_sensitivty.toml": _replace(g, "steps = 1", "steps = 1\nsensitivty = 2"),
        "audit_top_unknown.toml": "colour = 1\n" + g,
        "audit_target_unknown.toml": _replace(g, 'algorithm = "mechanism"', 'algorithm = "mechanism"\ncolour = 1'),
        "audit_claim_string.toml": _replace(g, "epsilon = 1.0", 'epsilon = "1.0"'),
        "audit_trials_string.toml": _replace(g, "trials = 200", 'trials = "200"'),
        "audit_name_list.toml": _replace(g, 'name = "Gaussian"', 'name = ["a", "b"]'),
        "audit_accountants_number.toml": _replace(g, 'accountants = ["exact"]', "accountants = 5"),
        "audit_seed_string.toml": _replace(g, "seed = 1", 'seed = "1"'),
        "audit_no_targets.toml": 'title = "empty"\n',
        "audit_probe_unknown.toml": _replace(g, 'name = "gaussian"', 'name = "no-such-probe"'),
        "audit_probe_key.toml": _replace(g, "trials = 200", "trials = 200\ncolour = 1"),
        # a probe parameter the target binds (the probe would attack another mechanism than the claim's)
        "audit_probe_overrides_target.toml": _replace(
            g, "trials = 200", "trials = 200\n[target.probes.params]\nnoise_multiplier = 0.1"
        ),
        "audit_user_code.toml": g
        + '[[target.probes]]\nname = "user"\nkind = "mechanism"\ntrials = 200\n'
        + '[target.probes.params]\nfunction = "shutil:rmtree"\ndatasets = "ds.toml"\n',
        "audit_delta_range.toml": _replace(g, "delta = 1e-5", "delta = 2.0"),
        "audit_algorithm_bad.toml": _replace(g, 'algorithm = "mechanism"', 'algorithm = "quantum"'),
        # the DP-Fed-PNE end-to-end probe's score must be one it knows (replay, upload, node-difference)
        **hostile_audit_files(),
        "audit_pne_score.toml": 'title = "pne"\nseed = 1\n[[target]]\nname = "PNE"\nalgorithm = "dp-fed-pne"\n'
        + 'accountants = ["exact"]\n[target.parameters]\nhorizon = 20\n[target.claim]\nepsilon = 3.0\n'
        + 'delta = 1e-5\nneighbouring = "replace-one"\nunit = "one reward"\n[[target.probes]]\n'
        + 'name = "pne-end-to-end"\nkind = "end-to-end"\ntrials = 10\n[target.probes.params]\nscore = "bogus"\n',
    }


DEEP = "x = " + "[" * 50_000 + "]" * 50_000 + "\n"  # the TOML and JSON parsers recurse per level


def hostile_audit_files() -> dict[str, str]:
    """Audit configurations from a hostile sweep (each was an internal error, a failed probe or a silently
    wrong verdict before the fix)."""
    g = GOOD_AUDIT
    weak = _replace(g, 'name = "gaussian"', 'name = "bug-weak-noise"') + "[target.probes.params]\n"
    return {
        "audit_delta_power_overflow.toml": _replace(g, "delta = 1e-5", 'delta = "10^400"'),
        "audit_delta_power_zero.toml": _replace(g, "delta = 1e-5", 'delta = "0^-1"'),
        "audit_reference_delta_power_zero.toml": _replace(
            g, 'accountants = ["exact"]', 'accountants = ["exact"]\nreference_delta = "0^-2"'
        ),
        # a boolean is not the number 1 (a planted bug that divides the noise by 1 is no bug: a PASS)
        "audit_probe_param_bool.toml": weak + "noise_reduction = true\n",
        "audit_probe_param_string.toml": weak + 'noise_reduction = "10"\n',
        "audit_probe_noise_reduction_zero.toml": weak + "noise_reduction = 0\n",
        "audit_duplicate_names.toml": g + g[g.index("[[target]]") :],
        "audit_accountant_twice.toml": _replace(g, '["exact"]', '["exact", "rdp", "exact"]'),
        # the target binds the probe's noise, so its own calibration was silently ignored
        "audit_probe_calibration.toml": _replace(
            g, "trials = 200", 'trials = 200\n[target.probes.params]\ncalibration = "analytic"'
        ),
        # refused only once the audit ran the probe, after the accounting, naming "trials" alone
        "audit_trials_beyond_memory.toml": _replace(g, "trials = 200", "trials = 1e30"),
        "audit_batch_beyond_memory.toml": _replace(g, "trials = 200", "trials = 200\nbatch_size = 1e15"),
        "audit_deep.toml": DEEP,
        "attack_deep.toml": DEEP,
    }


# ----- dpaudit estimate: score files ------------------------------------------------------------------
def _rows(header: str, rows) -> str:
    return header + "\n" + "".join(f"{s},{b}\n" for s, b in rows)


GOOD_SCORE_ROWS = [(f"{0.1 * i:.1f}", i % 2) for i in range(40)]  # 20 per world / 20 included


def _npy(array) -> bytes:
    import io

    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, np.asarray(array), allow_pickle=False)
    return buffer.getvalue()


def estimate_files() -> dict[str, str | bytes]:
    import numpy as np

    rows = GOOD_SCORE_ROWS
    plain = np.array([[float(s), b] for s, b in rows])
    fields = np.zeros(40, dtype=[("score", float), ("label", float)])
    return {
        "est_multi.csv": _rows("score,world", rows),
        "est_one.csv": _rows("score,included", rows),
        "est_plain.npy": _npy(plain),
        "est_header.csv": _rows("score,label", rows),
        "est_extra_column.csv": "score,world,colour\n" + "".join(f"{s},{b},red\n" for s, b in rows),
        "est_both_labels.csv": "score,world,included\n" + "".join(f"{s},{b},{b}\n" for s, b in rows),
        "est_no_header.csv": _rows("0.5,1", rows),
        "est_nonbinary.csv": _rows("score,world", rows[:-1] + [("1.0", 2)]),
        "est_label_half.csv": _rows("score,world", rows[:-1] + [("1.0", 0.5)]),
        "est_nan.csv": _rows("score,world", rows[:-1] + [("nan", 1)]),
        "est_inf.csv": _rows("score,world", rows[:-1] + [("inf", 1)]),
        "est_text.csv": _rows("score,world", rows[:-1] + [("high", 1)]),
        "est_few.csv": _rows("score,world", rows[:10]),
        "est_ragged.csv": _rows("score,world", rows) + "1.0,1,3\n",
        "est_header_only.csv": "score,world\n",
        "est_binary.csv": b"\xff\xfe\x00score,world\n",
        "est_one_all_in.csv": _rows("score,included", [(s, 1) for s, _ in rows]),
        "est_notnpy.npy": "not a numpy file\n",
        "est_3col.npy": _npy(np.zeros((40, 3))),
        "est_fields.npy": _npy(fields),
        "est_nan.npy": _npy(np.where(np.arange(80).reshape(40, 2) == 2, np.nan, plain)),
        # a cast to float dropped the imaginary part; a per-row array of scores was an IndexError (exit 4)
        "est_complex.npy": _npy(plain + 1j),
        "est_dates.npy": _npy(_fields(("score", "datetime64[D]"), plain)),
        "est_nested.npy": _npy(_fields(("score", float, (3,)), plain)),
    }


def _fields(score_field: tuple, plain):
    """A structured array of ``plain``'s labels as 'world' and a 'score' field of the given type."""
    import numpy as np

    array = np.zeros(len(plain), dtype=[score_field, ("world", float)])
    array["world"] = plain[:, 1]
    return array
