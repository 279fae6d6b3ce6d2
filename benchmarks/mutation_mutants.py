"""The in-scope mutants of the private variants' release code: scope, operators, enumeration, fingerprints.

``SCOPE`` names, per system, the functions of the release path (noise, clip, sampling, weighting, scaling,
what is uploaded or broadcast); cosmic-ray's operators (``OPERATORS``) are applied at every position inside
them, less lines of input validation (an ``if`` whose body only raises). A mutant is identified by
(file, operator, occurrence) and carries its mutated source; its ``fingerprint`` hashes that source with
the files the audit reads (``code_fingerprint``: the repository files its unmutated run imported, the data
files, the audit script and configurations), so a recorded result is reused only for the same inputs.
"""

from __future__ import annotations

import ast
import hashlib
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# system -> [(file, qualified function, line markers or None for the whole function)]
SCOPE = {
    "mechanism": [
        ("accounting/mechanisms.py", f, None)
        for f in (
            "_AdditiveNoise.noise_scale", "_AdditiveNoise.release", "Gaussian._draw", "Laplace._draw",
            "SubsampledGaussian.noise_std", "SubsampledGaussian.sample", "SubsampledGaussian.clip_vectors",
            "SubsampledGaussian.block_noise_std", "SubsampledGaussian.add_noise", "SubsampledGaussian.release",
            "_weighted_sums",
        )
    ],
    "fedzero": [
        ("dpfed/fedzero/private.py", "_PrivateUplink._per_worker", None),
        ("dpfed/fedzero/private.py", "WorkerScalarUplink.aggregate", None),
        ("dpfed/fedzero/private.py", "dp_uplink", None),
    ],
    "fkm": [
        ("dpfed/fkm/private.py", "EventLevelFeedback.observe", None),
        ("dpfed/fkm/private.py", "event_mechanism", None),
        ("dpfed/fkm/algorithm.py", "_play", ("feedback.observe", "one_point_gradient", '"loss", observed')),
    ],
    "duets": [
        ("dpfed/duets/private.py", "agent_clip_bound", None),
        ("dpfed/duets/private.py", "epoch_mechanism", None),
        ("dpfed/duets/private.py", "release_sum", None),
        ("dpfed/duets/algorithm.py", "clip_rewards", None),
        ("dpfed/duets/algorithm.py", "server_release", None),
        (
            "dpfed/duets/algorithm.py",
            "communicate",
            ("statistics = ", "total = ", "if config.private", "v_bar = ", '"v_bar"'),
        ),
    ],
    "pne": [
        ("dpfed/pne/private.py", "RewardPrivatizer.__call__", None),
        ("dpfed/pne/private.py", "RewardPrivatizer.final", None),
        ("dpfed/pne/private.py", "dp_mechanism", None),
    ],
    "fts": [
        (
            "dpfed/fts/server.py",
            "Server.aggregate",
            ("present = ", "uploads = xp.where", "w = self.weights", "self.mechanism is None", "mask = ", "if self."),
        ),
        # what an agent uploads: its posterior draw (FeaturePosteriors.add with a generator)
        ("dpfed/fts/agents.py", "FeaturePosteriors.add", None),
        ("dpfed/fts/agents.py", "FeaturePosteriors._border_and_sample", None),
    ],
}

_ARITH = "(Add|Sub|Mul|Div|Pow)"
OPERATORS = re.compile(
    rf"core/(ReplaceBinaryOperator_{_ARITH}_{_ARITH}$|ReplaceComparisonOperator_|ReplaceUnaryOperator_|AddNot$"
    r"|ReplaceTrueWithFalse$|ReplaceFalseWithTrue$|ReplaceAndWithOr$|ReplaceOrWithAnd$|NumberReplacer$"
    r"|ZeroIterationForLoop$|ExceptionReplacer$)"
)
#: the code the audit of any mutant reads (hashed into every fingerprint, with the system's configurations)
AUDITED = ("accounting/", "dpfed/", "attacks/", "reports/", "benchmarks/mutation_audit.py")


@dataclass(frozen=True)
class Mutant:
    system: str
    file: str
    operator: str
    occurrence: int
    line: int
    source: str  # the whole mutated file
    diff: str

    @property
    def key(self) -> str:
        return f"{self.system}:{self.file}:{self.operator}:{self.occurrence}"

    def fingerprint(self, code: str) -> str:
        return hashlib.sha256(f"{code}\0{self.key}\0{self.source}".encode()).hexdigest()


def function_lines(path: Path, qualified: str, markers) -> set[int]:
    """Line numbers of ``qualified`` (``f`` or ``Class.f``) in ``path`` that may be mutated: all its lines
    (or those containing one of ``markers``) less input validation (an ``if`` whose body only raises)."""
    source = path.read_text()
    tree = ast.parse(source)
    owner, _, name = qualified.rpartition(".")
    body = tree.body
    if owner:
        (cls,) = [n for n in body if isinstance(n, ast.ClassDef) and n.name == owner]
        body = cls.body
    (func,) = [n for n in body if isinstance(n, ast.FunctionDef) and n.name == name]
    lines = set(range(func.body[0].lineno, func.end_lineno + 1))
    for node in ast.walk(func):
        if isinstance(node, ast.If) and all(isinstance(s, ast.Raise) for s in node.body):
            lines -= set(range(node.lineno, node.end_lineno + 1))
    if markers:
        text = source.splitlines()
        lines = {n for n in lines if any(m in text[n - 1] for m in markers)}
    return lines


def tracked_files(root: Path = ROOT) -> list[str]:
    """The tracked and untracked-but-not-ignored files of the work tree."""
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout.split()
    return sorted(name for name in out if (root / name).is_file())


AUDIT_SCRIPT = "benchmarks/mutation_audit.py"
RELEASE_SCRIPT = "benchmarks/mutation_release.py"


def code_fingerprint(configs, root: Path = ROOT, reads=None, system: str | None = None) -> str:
    """sha256 over the names and contents of the code the audits read and of ``configs`` (the audit
    configurations of one system). The code: with ``reads`` (the repository's Python files an audit of ``system``
    imported, as ``mutation_audit.py`` lists them), those files, every file of ``AUDITED`` that is not Python
    (templates, schemas, data) and ``mutation_audit.py`` with its ``TARGETS`` table cut to ``system``'s entry (another
    system's targets do not change this one's audit); without, every file of ``AUDITED`` (all of it: conservative)."""
    digest = hashlib.sha256()
    everything = [p for top in AUDITED for p in ([root / top] if top.endswith(".py") else (root / top).rglob("*"))
                  if p.is_file() and "__pycache__" not in p.parts]
    names = {str(p.relative_to(root)) for p in everything}
    if reads is not None:
        names = {n for n in names if not n.endswith(".py") or n in set(reads)} | {AUDIT_SCRIPT}
    for name in sorted(names) + sorted(configs):
        content = (root / name).read_bytes()
        if reads is not None and name == AUDIT_SCRIPT:
            content = _audit_script_for(content.decode(), system).encode()
        digest.update(name.encode() + b"\0" + content + b"\0")
    return digest.hexdigest()


def _audit_script_for(source: str, system: str | None) -> str:
    """``mutation_audit.py``'s source with its ``TARGETS = {...}`` assignment replaced by ``system``'s entry."""
    return _cut_table(source, system, "TARGETS")


def _cut_table(source: str, system: str | None, table: str) -> str:
    """``source`` with its ``table = {...}`` assignment replaced by ``system``'s entry."""
    module = ast.parse(source)
    for node in module.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [table]:
            try:
                entry = ast.literal_eval(node.value).get(system)
            except ValueError:  # a table built by comprehensions (CONFIGURATIONS): its value, module run in isolation
                namespace: dict = {}
                exec(compile(source, "<cut>", "exec"), namespace)  # definitions only: no side effects
                entry = namespace[table].get(system)
            lines = source.splitlines(keepends=True)
            cut = f"{table}[{system!r}] = {entry!r}\n"
            return "".join(lines[: node.lineno - 1]) + cut + "".join(lines[node.end_lineno:])
    return source


#: the scripts a survivor check runs besides the release code (a changed check retires its recorded verdicts)
CHECKERS = ("benchmarks/mutation_release.py", "benchmarks/mutation_survivors.py", "benchmarks/mutation_law.py",
            "benchmarks/mutation_fts.py", "benchmarks/mutation_duets.py", "benchmarks/mutation_fedzero.py")


def check_fingerprint(root: Path = ROOT, system: str | None = None) -> str:
    """sha256 over what a survivor check of ``system`` (``mutation_survivors.py``) runs: every file of ``AUDITED``
    but the audit script (the check runs the release code, not the audit) and the check scripts themselves, with
    ``mutation_release.py``'s ``CONFIGURATIONS`` table cut to ``system``'s entry (another system's configurations
    do not change this one's check)."""
    digest = hashlib.sha256()
    names = {str(p.relative_to(root)) for top in AUDITED if not top.endswith(".py") for p in (root / top).rglob("*")
             if p.is_file() and "__pycache__" not in p.parts}
    for name in sorted(names) + list(CHECKERS):
        content = (root / name).read_bytes()
        if name == RELEASE_SCRIPT:
            content = _cut_table(content.decode(), system, "CONFIGURATIONS").encode()
        digest.update(name.encode() + b"\0" + content + b"\0")
    return digest.hexdigest()


def file_digest(root: Path, name: str) -> str | None:
    """sha256 of one file's bytes (None when it is gone)."""
    path = root / name
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else None


def mutants(system: str, root: Path = ROOT) -> list[Mutant]:
    """Every in-scope mutant of ``system``: each operator of ``OPERATORS`` at each of its positions in the
    scoped lines, in file (``SCOPE``'s order), operator and occurrence order."""
    import difflib

    from cosmic_ray.ast import ast_nodes, get_ast_from_path
    from cosmic_ray.mutating import mutate_code
    from cosmic_ray.plugins import get_operator, operator_names

    allowed: dict[str, set[int]] = {}
    for path, qualified, markers in SCOPE[system]:
        allowed.setdefault(path, set()).update(function_lines(root / path, qualified, markers))
    found = []
    for path in allowed:  # in SCOPE's order (DP-FTS-DE: the server before the agents)
        original = (root / path).read_text()
        module = get_ast_from_path(root / path)
        for name in operator_names():
            if not OPERATORS.match(name):
                continue
            operator = get_operator(name)()
            positions = [start for node in ast_nodes(module) for start, _ in operator.mutation_positions(node)]
            for occurrence, start in enumerate(positions):
                if start[0] not in allowed[path]:
                    continue
                mutated = mutate_code(original, operator, occurrence)
                if mutated is None:
                    continue
                diff = "\n".join(
                    difflib.unified_diff(original.splitlines(), mutated.splitlines(), lineterm="", n=0)
                )
                found.append(Mutant(system, path, name, occurrence, start[0], mutated, diff))
    return found
