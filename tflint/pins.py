"""The TensorFlow and Keras a project runs on, read from what it pins.

Many real projects pin TF 1.x, TF 2.2–2.15 or Keras 2, and advice written for today's TensorFlow (2.16+, Keras 3)
is wrong for them. Without a `target-version` in the configuration, the target of a file is found here:

- the nearest folder at or above the file (up to the repository's root) whose `requirements*.txt` (also under a
  `requirements/` folder), `setup.py`, `setup.cfg`, `pyproject.toml`, `environment.yml` or `Pipfile` names
  TensorFlow or Keras; the target is the newest TensorFlow release the pins allow (`tensorflow==1.15` -> 1.15,
  `tensorflow>=2.4,<2.16` -> 2.15, `tensorflow~=2.10.0` -> 2.10; `tensorflow>=2.4` alone -> today's);
- where those name no TensorFlow release, the `pip install` lines of the folder's Markdown (README.md, INSTALL.md,
  the installation pages under `docs/`, `doc/` or `g3doc/`);
- Keras 2 when the project pins `keras<3` (or a 2.x release) or depends on `tf-keras`, or its TensorFlow is older
  than 2.16 (where `tf.keras` is Keras 2); a dependency on TensorFlow Addons allows no TensorFlow from 2.16 on.

Nothing here imports or runs the project's code: setup.py is read as text.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional

TODAY = (2, 21)
# TensorFlow releases, oldest first (1.0-1.15, 2.0-today): the target is the newest one the pins allow
RELEASES = [(1, m) for m in range(16)] + [(2, m) for m in range(TODAY[1] + 1)]
TF_PACKAGES = frozenset({
    "tensorflow", "tensorflow-gpu", "tensorflow-cpu", "tensorflow-macos", "tensorflow-intel", "tensorflow-aarch64",
    "intel-tensorflow", "tensorflow-rocm",
})
KERAS2_PACKAGES = frozenset({"tf-keras", "tf_keras"})
# TensorFlow Addons never supported Keras 3: its newest release (0.23.0) requires TensorFlow >= 2.13, < 2.16 (the
# wheel's tensorflow_addons/version.py; 0.14.0: >= 2.4, < 2.7), so a project that depends on it runs Keras 2
ADDONS_PACKAGES = frozenset({"tensorflow-addons", "tensorflow_addons"})
_NAME = r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)"
_REQ = re.compile(_NAME + r"\s*(?:\[[^\]]*\])?\s*(?P<spec>(?:[<>=!~^]=?|===)\s*[^;#\s,'\"]+(?:\s*,\s*(?:[<>=!~]=?)\s*[^;#\s,'\"]+)*)?")
_VERSION = re.compile(r"(\d+)(?:\.(\d+|\*))?(?:\.(\d+|\*))?")
PROJECT_FILES = ("setup.py", "setup.cfg", "pyproject.toml", "environment.yml", "environment.yaml", "Pipfile")


@dataclass(frozen=True)
class Pins:
    tensorflow: Optional[tuple[int, int]]  # the newest TensorFlow release the pins allow (None: not pinned)
    keras2: bool  # the project runs Keras 2 (keras<3, tf-keras, or TensorFlow < 2.16)
    source: str  # where this was read, for messages: "requirements.txt: tensorflow==1.15"
    keras_version: Optional[tuple[int, int]] = None  # an exact Keras release (`keras==2.0.8`, a notebook's output)
    oldest: Optional[tuple[int, int]] = None  # the oldest TensorFlow release the pins allow (`>=1.15`: 1.15)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _version(text: str) -> Optional[tuple[int, int, Optional[int], bool]]:
    """(major, minor, patch or None, wildcard) of a version in a specifier."""
    m = _VERSION.match(text.strip())
    if not m:
        return None
    major = int(m.group(1))
    minor_s, patch_s = m.group(2), m.group(3)
    wildcard = minor_s == "*" or patch_s == "*"
    minor = int(minor_s) if minor_s and minor_s != "*" else (None if minor_s == "*" else 0)
    patch = int(patch_s) if patch_s and patch_s != "*" else None
    return major, (minor if minor is not None else -1), patch, wildcard


def allows(spec: str, release: tuple[int, int]) -> bool:
    """Whether a release (major, minor) satisfies every clause of a specifier such as `>=2.4,<2.16` (patch
    releases of a minor count as that minor: `<2.15.1` allows 2.15; a poetry `^2.10` is `>=2.10,<3`)."""
    for clause in (c.strip() for c in spec.split(",")):
        if not clause:
            continue
        m = re.match(r"(===|==|!=|<=|>=|~=|<|>|\^|~)?\s*(.+)", clause)
        op, rest = (m.group(1) or "=="), m.group(2)
        v = _version(rest)
        if v is None:
            continue
        major, minor, patch, wildcard = v
        if minor < 0:  # `==2.*`
            if op in ("==", "===", "~=") and release[0] != major:
                return False
            continue
        at = (major, minor)
        if op in ("==", "==="):
            ok = release == at
        elif op == "!=":
            ok = release != at or patch is not None  # `!=2.1.0` excludes one patch release, not the minor
        elif op == ">=":
            ok = release >= at
        elif op == ">":
            ok = release > at if patch is None else release >= at
        elif op == "<=":
            ok = release <= at
        elif op == "<":
            ok = release < at if not patch else release <= at
        elif op == "~=":
            ok = release == at if patch is not None else (release >= at and release[0] == major)
        elif op == "^":
            ok = release >= at and release[0] == major if major else release == at
        elif op == "~":
            ok = release == at
        else:
            ok = True
        if not ok:
            return False
    return True


def requirements(text: str) -> Iterable[tuple[str, str]]:
    """(normalized name, specifier) of every requirement-like string in a text (requirement lines, the strings
    of setup.py/setup.cfg/pyproject lists, conda's `tensorflow=1.15`, poetry's `tensorflow = "^2.10"`)."""
    for line in text.splitlines():
        line = line.split("#", 1)[0]
        for piece in re.findall(r"""['"]([^'"]+)['"]""", line) or [line]:
            piece = piece.strip().lstrip("- ").strip()
            m = _REQ.match(piece)
            if not m:
                continue
            name = _norm(m.group("name"))
            spec = (m.group("spec") or "").replace(" ", "")
            if spec.startswith("=") and not spec.startswith("=="):
                spec = "=" + spec  # conda: tensorflow=1.15
            yield name, spec
        # poetry / Pipfile: `tensorflow = "^2.10"` (the name is outside the quotes)
        m = re.match(r"\s*" + _NAME + r"""\s*=\s*['"]([^'"]*)['"]""", line)
        if m:
            yield _norm(m.group("name")), m.group(2).replace(" ", "") if m.group(2) != "*" else ""


def pins_of_text(texts: Iterable[tuple[str, str]]) -> Optional[Pins]:
    """Pins from (file name, text) pairs; None when none of them names TensorFlow or Keras."""
    tf_specs: list[tuple[str, str, str]] = []  # (file, package, specifier)
    keras2 = False
    keras_source = ""
    keras_version: Optional[tuple[int, int]] = None
    for fname, text in texts:
        for name, spec in requirements(text):
            if name in TF_PACKAGES:
                tf_specs.append((fname, name, spec))
            elif name in ADDONS_PACKAGES:
                tf_specs.append((fname, f"{name}{spec} -> tensorflow", "<2.16"))
            elif name in KERAS2_PACKAGES:
                keras2, keras_source = True, f"{fname}: {name}{spec}"
            elif name == "keras" and spec and not any(allows(spec, (3, m)) for m in range(0, 20)):
                keras2, keras_source = True, f"{fname}: keras{spec}"
                exact = re.fullmatch(r"==(\d+)\.(\d+)(?:\.[\d*]+)?", spec)
                newest = [r for r in ((2, m) for m in range(16)) if allows(spec, r)]
                if exact:
                    keras_version = (int(exact.group(1)), int(exact.group(2)))
                elif newest and newest[-1] < (2, 4):
                    # `keras<=2.3.1`: every release it allows is multi-backend Keras, so the newest stands for them
                    keras_version = newest[-1]
            elif name == "keras" and spec and not any(allows(spec, (2, m)) for m in range(0, 16)):
                # Keras 3 only (`keras>=3.15`): TensorFlow 2.16 is the first that accepts it (its wheel requires
                # keras>=3.0.0; 2.15.0's requires keras<2.16), so the TensorFlow it runs with is 2.16 or newer
                tf_specs.append((fname, f"keras{spec} -> tensorflow", ">=2.16"))
    if not tf_specs and not keras2:
        return None
    target: Optional[tuple[int, int]] = None
    oldest: Optional[tuple[int, int]] = None
    source = keras_source
    specs = [(f, n, sp) for f, n, sp in tf_specs if sp]
    if specs:
        allowed = [r for r in RELEASES if all(allows(sp, r) for _, _, sp in specs)]
        if allowed:
            target, oldest = allowed[-1], allowed[0]
            source = "; ".join(f"{f}: {n}{sp}" for f, n, sp in specs)
        else:
            # files that disagree (requirements.txt `tensorflow==2.11.1`, an old conda yml `tensorflow==2.1.0rc1`):
            # the first file, in the order the project files are read (requirements*.txt first), that names one
            def rank(fname: str) -> tuple[int, str]:
                order = ("requirements.txt", "requirements", "setup.py", "pyproject.toml", "setup.cfg", "Pipfile")
                return next((i for i, o in enumerate(order) if fname.startswith(o)), len(order)), fname

            for fname in sorted(dict.fromkeys(f for f, _, _ in specs), key=rank):
                own = [(f, n, sp) for f, n, sp in specs if f == fname]
                allowed = [r for r in RELEASES if all(allows(sp, r) for _, _, sp in own)]
                if allowed:
                    target, oldest = allowed[-1], allowed[0]
                    source = "; ".join(f"{f}: {n}{sp}" for f, n, sp in own) + " (other files disagree)"
                    break
    keras2 = keras2 or (target is not None and target < (2, 16))
    if target is None and not keras2:
        return None
    return Pins(target, keras2, source, keras_version, oldest)


UNPINNED_LATEST = frozenset({"tensorflow", "tensorflow-cpu"})


def unpinned_requirement(texts: Iterable[tuple[str, str]]) -> Optional[Pins]:
    """`tensorflow` listed with no version in a requirements file: `pip install -r requirements.txt` installs the
    newest release, and Keras 3 with it (round 22: hunkim/DeepLearningZeroToAll's TF2 labs call `SGD(lr=0.1)`,
    which Keras 3 rejects; judged a miss, as Hvass-Labs' tutorials were before). The weakest evidence there is:
    taken only when no folder up to the repository's root pins a release, by its project files, Markdown or job
    scripts. Not `tensorflow-gpu` (its last release, 2.12, is an installer that refuses to install) nor other
    builds, and not a package's setup.py, whose users choose the release."""
    for fname, text in texts:
        if "requirements" not in fname or not fname.endswith((".txt", ".in")):
            continue
        for name, spec in requirements(text):
            if name in UNPINNED_LATEST and not spec:
                newest = RELEASES[-1]
                return Pins(newest, False, f"{fname}: tensorflow with no version (pip installs the newest, "
                                           f"{newest[0]}.{newest[1]})", None, newest)
    return None


_DOCKER_IMAGE = re.compile(r"\btensorflow/tensorflow:(\d+\.\d+(?:\.\d+)?)(?:-[\w.-]+)?")
# Google Cloud's Deep Learning images and Vertex AI's prebuilt containers name their release:
# `gcr.io/deeplearning-platform-release/tf2-gpu.2-3`, `us-docker.pkg.dev/vertex-ai/training/tf-cpu.2-1:latest`,
# a notebook's `environment` metadata `tf22-cpu.2-2`
_GCP_IMAGE = re.compile(r"(?<![\w.-])tf\d*-(?:cpu|gpu)\.(\d+)-(\d+)\b")


# The month each TensorFlow minor release first reached PyPI (the `tensorflow` package's simple JSON index,
# `upload-time` of its first non-rc file; read 2026-11-24). NVIDIA's NGC images are named by year and month
# (`nvcr.io/nvidia/tensorflow:21.02-tf2-py3`) and ship a release that existed then.
RELEASE_MONTHS = {
    (1, 13): (2019, 2), (1, 14): (2019, 6), (1, 15): (2019, 10), (2, 0): (2019, 9), (2, 1): (2020, 1),
    (2, 2): (2020, 5), (2, 3): (2020, 7), (2, 4): (2020, 12), (2, 5): (2021, 5), (2, 6): (2021, 8), (2, 7): (2021, 11),
    (2, 8): (2022, 2), (2, 9): (2022, 5), (2, 10): (2022, 9), (2, 11): (2022, 11), (2, 12): (2023, 3),
    (2, 13): (2023, 7), (2, 14): (2023, 9), (2, 15): (2023, 11), (2, 16): (2024, 3), (2, 17): (2024, 7),
    (2, 18): (2024, 10), (2, 19): (2025, 3), (2, 20): (2025, 8), (2, 21): (2026, 3),
}
# Google Cloud VM images and runtimes named by their TensorFlow release: a Deep Learning VM or TPU VM image family
# (`--image-family=tf-2-3-1`, `tf2-2-3-cu110`, `tf-1-15-cpu`), a Cloud TPU's software version (`gcloud compute tpus
# create ... --version=2.3.1`, `ctpu up --tf-version=1.15`, `--version=tpu-vm-tf-2.9.1`) and an AI Platform
# training runtime (`--runtime-version 1.15`: its TensorFlow release, by Google's runtime version list)
_GCP_FAMILY = re.compile(r"--image-family[= ]+[\"']?tf2?-(?:ent-)?(\d+)-(\d+)(?![\d.])")
_TPU_VERSION = re.compile(r"--(?:tf-)?version[= ]+[\"']?(?:tpu-vm-tf-)?(\d+)\.(\d+)(?:\.\d+)?\b")
_RUNTIME_VERSION = re.compile(r"--runtime-version[= ]+[\"']?(\d+)\.(\d+)\b")
_NGC_IMAGE = re.compile(r"\bnvcr\.io/nvidia/(?:tensorflow|merlin/merlin-tensorflow(?:-training)?):(\d{2})\.(\d{2})"
                        r"(?:-tf([12]))?\b")


def ngc_release(year: int, month: int, major: int) -> Optional[str]:
    """The requirement an NGC TensorFlow image of that month stands for: TF 1.15 for a `-tf1` image; for `-tf2`,
    the newest 2.x released before that month, or the one before it (NGC ships the current release, now and then
    one behind): `21.02-tf2` -> `tensorflow>=2.3,<2.5`."""
    if major == 1:
        return "tensorflow==1.15"
    before = sorted(v for v, ym in RELEASE_MONTHS.items() if v[0] == 2 and ym < (2000 + year, month))
    if not before:
        return None
    newest = before[-1]
    oldest = before[-2] if len(before) > 1 else newest
    return f"tensorflow>={oldest[0]}.{oldest[1]},<{newest[0]}.{newest[1] + 1}"


def pip_installs(text: str) -> str:
    """The requirements a Dockerfile (or shell script, or README) installs with `pip install ...`, one per line: a
    project that builds its image with `RUN pip3 install tensorflow==2.2.0` runs that TensorFlow. TensorFlow's own
    Docker images count as installing their release (`FROM tensorflow/tensorflow:2.4.0-gpu`, a README's
    "docker image tensorflow/tensorflow:2.4.0-gpu")."""
    out = [f"tensorflow=={m.group(1)}" for m in _DOCKER_IMAGE.finditer(text)]
    out += [f"tensorflow=={m.group(1)}.{m.group(2)}" for m in _GCP_IMAGE.finditer(text)]
    out += [f"tensorflow=={m.group(1)}.{m.group(2)}" for m in _GCP_FAMILY.finditer(text)]
    out += [f"tensorflow=={m.group(1)}.{m.group(2)}" for m in _RUNTIME_VERSION.finditer(text)]
    out += [f"tensorflow=={m.group(1)}.{m.group(2)}" for line in text.splitlines() if "tpu" in line.lower()
            for m in _TPU_VERSION.finditer(line)]
    out += [r for m in _NGC_IMAGE.finditer(text)
            if (r := ngc_release(int(m.group(1)), int(m.group(2)), int(m.group(3) or 2)))]
    for line in text.replace("\\\n", " ").splitlines():
        for m in re.finditer(r"\bpip3?\s+install\s+([^&;|]*)", line):
            for token in m.group(1).split():
                token = token.strip("'\"")
                if re.fullmatch(r"tf-nightly(?:-gpu|-cpu)?", token):
                    token = f"tensorflow>={TODAY[0]}.{TODAY[1]}"  # the nightly build: the newest release or later
                if token and not token.startswith("-"):
                    out.append(token)
    return "\n".join(out)


@lru_cache(maxsize=4096)
def _project_texts(folder: Path) -> tuple[tuple[str, str], ...]:
    """The project files of one folder, read once per run (its pins and its unpinned requirements both read them)."""
    names = [folder / n for n in PROJECT_FILES]
    names += sorted(folder.glob("requirements*.txt")) + sorted(folder.glob("requirements/*.txt"))
    out = []
    for p in names + sorted(folder.glob("Dockerfile*")):
        try:
            if p.is_file() and p.stat().st_size < 1_000_000:
                text = p.read_text(encoding="utf-8", errors="replace")
                if p.name.startswith("Dockerfile"):
                    text = pip_installs(text)
                out.append((p.name if p.parent == folder else f"{p.parent.name}/{p.name}", text))
        except OSError:
            continue
    return tuple(out)


# An AI Platform (Cloud ML Engine) training job's runtime in its YAML config (`trainingInput: runtimeVersion: "1.4"`)
_RUNTIME_YAML = re.compile(r"\bruntimeVersion\s*:\s*[\"']?(\d+)\.(\d+)\b")
_JOB_FILES = ("*.sh", "*.ipynb", "*.yaml", "*.yml")


def _job_texts(folder: Path) -> list[tuple[str, str]]:
    """The training runtimes a folder's job scripts, notebooks and configs submit its code to: `gcloud ml-engine jobs
    submit training ... --runtime-version=1.4` in a shell script or a notebook's `!gcloud` line, `runtimeVersion:
    "1.4"` in a job config. A trainer package beside (or below) the notebook that submits it runs that release
    (round 19: tf-estimator-tutorials' trainers, submitted to runtime 1.4, pin nothing else)."""
    out = []
    for pattern in _JOB_FILES:
        for p in sorted(folder.glob(pattern))[:40]:
            try:
                if not p.is_file() or p.stat().st_size > 2_000_000:
                    continue
                text = p.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if "untime" not in text:
                continue
            found = [f"tensorflow=={m.group(1)}.{m.group(2)}" for rx in (_RUNTIME_VERSION, _RUNTIME_YAML)
                     for m in rx.finditer(text)]
            if found:
                out.append((p.name, "\n".join(dict.fromkeys(found))))
    return out


_DOC_FOLDERS = ("docs", "doc", "g3doc")
_INSTALL_DOC = re.compile(r"install|setup|getting.?started|requirement|readme", re.I)


def _markdown_texts(folder: Path) -> list[tuple[str, str]]:
    """The `pip install ...` lines of a folder's Markdown (README.md, INSTALL.md) and of the installation pages of
    its docs folder (`g3doc/setup/installation.md`), and the releases it names in words (`prose_pins`): where a
    project that pins nothing else says what it runs on."""
    paths = sorted(folder.glob("*.md"))[:20]
    for sub in _DOC_FOLDERS:
        if (folder / sub).is_dir():  # the installation pages two levels down at most (`g3doc/setup/installation.md`)
            found = [*(folder / sub).glob("*.md"), *(folder / sub).glob("*/*.md")]
            paths += sorted(p for p in found if _INSTALL_DOC.search(p.name))[:20]
    out = []
    for p in paths:
        try:
            if p.is_file() and p.stat().st_size < 1_000_000:
                md = p.read_text(encoding="utf-8", errors="replace")
                text = "\n".join(t for t in (pip_installs(md), prose_pins(md)) if t)
                if text:
                    out.append((p.relative_to(folder).as_posix(), text))
        except (OSError, ValueError):
            continue
    return out


_PROSE_TESTED = re.compile(
    r"\btested\s+(?:with|on|using|against|under)\s+(?:\*\*|`)?tensorflow(?:-gpu)?(?:\*\*|`)?\s*(?:version\s*)?"
    r"(?:\*\*|`)?v?(\d+\.\d+(?:\.\d+)?)", re.I)
_PROSE_AT_LEAST = re.compile(
    r"\btensorflow(?:-gpu)?\s*(?:version\s*)?(?:\*\*|`)?v?(\d+\.\d+)(?:\.\d+)?(?:\*\*|`)?\s*(?:or|and)\s*"
    r"(?:later|above|higher|newer)\b", re.I)


# Google Cloud's notebook and VM images are named by their release: "select TensorFlow Enterprise 2.6 with Tesla
# T4" (practical-ml-vision-book's README, the only place it names what its notebooks run on: 4 misses in round 15)
_PROSE_ENTERPRISE = re.compile(r"\btensorflow\s+enterprise\s+v?(\d+\.\d+)\b(?!\s*\+)", re.I)
_PROSE_REQUIRES = re.compile(
    r"\brequires?\s+(?:\*\*|`)?tensorflow(?:-gpu)?\s*(==|>=)\s*v?(\d+\.\d+(?:\.\d+)?)", re.I)


# A requirements list in Markdown: a list item that is a requirement and nothing else (`+ Tensorflow == 2.0.0`,
# `- tensorflow-gpu>=1.13`, `* TensorFlow 1.15`): calmisential/TensorFlow2.0_ResNet's README pins so (round 19)
_PROSE_LIST_ITEM = re.compile(
    r"^\s*(?:[-*+]|\d+\.)\s+(?:\*\*|`)?tensorflow(?:-gpu)?(?:\*\*|`)?\s*(==|>=|\s)\s*v?(\d+\.\d+(?:\.\d+)?)"
    r"(?:\*\*|`)?\s*$", re.I | re.M)

# A tested environment spelled as one comma-separated line that names Python and TensorFlow releases
# (`- Ubuntu 16.04, Python 3.6.9, Tensorflow 2.3.0, CUDA 10.01, cuDNN 7.6`: yu4u/age-gender-estimation, whose
# requirements.txt lists `tensorflow` with no version; `python3.7 tensorflow1.13` with no spaces: Stick-To/Object-
# Detection-Tensorflow's README, round 25)
_PROSE_ENV_LINE = re.compile(
    r"^(?=[^\n]*\bpython\s*v?\d+\.\d+)[^\n]*?(?:^|,|;|\s)\s*(?:\*\*|`)?tensorflow(?:-gpu)?(?:\*\*|`)?\s*v?"
    r"(\d+\.\d+(?:\.\d+)?)\b(?=\s*(?:,|;|$))", re.I | re.M)


# a source file's own header naming what it was written for: `# Tutorial written for - Tensorflow 1.15, Keras 2.2.4`
# (pythonlessons/Reinforcement_Learning: the original scripts say TF 1.15 / Keras 2.2.4 beside `_TF2` copies saying
# 2.3.1, under one requirements.txt that pins 2.3.1 for the copies: 37 TFL301 findings judged false in round 27)
_HEADER_WRITTEN_FOR = re.compile(
    r"\b(?:written|tested|developed|made)\s+(?:for|with|on|using|against)\b[\s:\-]*(?:\*\*|`)?tensorflow(?:-gpu)?"
    r"(?:\*\*|`)?\s*v?(\d+\.\d+(?:\.\d+)?)(?:[^\n]*?\bkeras\s*v?(\d+\.\d+(?:\.\d+)?))?", re.I)
HEADER_LINES = 15


def header_pins(text: str) -> Optional[Pins]:
    """The release a source file's header comments (its first HEADER_LINES lines: comments and the module docstring)
    say it was written or tested for, with the Keras release the same line names; None when they name none. The
    file's own word beats its folder's pins, which may be for other files."""
    head = "\n".join(text.split("\n", HEADER_LINES)[:HEADER_LINES])
    if "ensor" not in head:
        return None
    m = _HEADER_WRITTEN_FOR.search(head)
    if m is None:
        return None
    spec = f"tensorflow=={m.group(1)}" + (f"\nkeras=={m.group(2)}" if m.group(2) else "")
    return pins_of_text([("the file's header", spec)])


def prose_pins(text: str) -> str:
    """Requirements a README states in words: "tested with TensorFlow 1.13.1" (that release), "TensorFlow 2.4 or
    later" (at least it), "Requires tensorflow==2.1.0"; xlnet's README names its release only so (a TFL101 miss in
    round 16), keras-rl2's only so beside setup.py's open `tensorflow>=2.1.0` (round 18). One per line."""
    out = [f"tensorflow=={m.group(1)}" for m in _PROSE_TESTED.finditer(text)]
    out += [f"tensorflow>={m.group(1)}" for m in _PROSE_AT_LEAST.finditer(text)]
    out += [f"tensorflow{m.group(1)}{m.group(2)}" for m in _PROSE_REQUIRES.finditer(text)]
    out += [f"tensorflow=={m.group(1)}" for m in _PROSE_ENTERPRISE.finditer(text)]
    out += [f"tensorflow{m.group(1) if m.group(1).strip() else '=='}{m.group(2)}"
            for m in _PROSE_LIST_ITEM.finditer(text)]
    out += [f"tensorflow=={m.group(1)}" for m in _PROSE_ENV_LINE.finditer(text)]
    return "\n".join(dict.fromkeys(out))


@lru_cache(maxsize=4096)
def pins_for_folder(folder: Path, jobs: bool = True) -> Optional[Pins]:
    """The pins of the nearest folder at or above `folder` that names TensorFlow or Keras, stopping at the
    repository's root (a folder holding `.git`). A folder whose project files name no TensorFlow release gets it
    from the `pip install` lines of its Markdown, when those agree on one, else (with `jobs`, for code a training
    job runs, not a notebook) from the runtime its job scripts submit to."""
    listed: Optional[Pins] = None  # the nearest folder that lists `tensorflow` with no version
    for d in [folder, *folder.parents]:
        found = _pins_here(d, jobs)
        if found is not None:
            return found
        if listed is None:
            listed = unpinned_requirement(_project_texts(d))
        if (d / ".git").exists():
            break
    return listed


def _clear_pins() -> None:
    """Forget every folder's pins (a pins file changed): every cache."""
    _folder_cache_clear()
    _pins_here.cache_clear()
    _project_texts.cache_clear()
    _real_folder.cache_clear()
    _siblings_ran.cache_clear()


_folder_cache_clear = pins_for_folder.cache_clear
pins_for_folder.cache_clear = _clear_pins  # type: ignore[method-assign]


@lru_cache(maxsize=4096)
def _pins_here(d: Path, jobs: bool = True) -> Optional[Pins]:
    """The pins of folder `d` alone (its project files, then its Markdown, then its job scripts): once per folder,
    however many folders below it ask."""
    found = pins_of_text(_project_texts(d))
    if found is None or found.tensorflow is None:
        docs = pins_of_text(_markdown_texts(d))
        if (docs is None or docs.tensorflow is None) and jobs:
            texts = _job_texts(d)
            if len({t for _, t in texts}) == 1:  # every job of the folder submits to one runtime: else unknown
                docs = pins_of_text(texts) or docs
        if docs is not None and docs.tensorflow is not None:
            if found is None:
                return docs
            return Pins(docs.tensorflow, found.keras2 or docs.keras2, f"{found.source}; {docs.source}",
                        found.keras_version or docs.keras_version, docs.oldest)
    elif found.tensorflow == RELEASES[-1] and found.oldest is not None and found.oldest < found.tensorflow:
        # an open range (`tensorflow>=2.1.0` in setup.py) that the README narrows ("Requires tensorflow==2.1.0"):
        # the project runs what its documentation says, within the range its metadata allows
        docs = pins_of_text(_markdown_texts(d))
        if docs is not None and docs.tensorflow is not None and found.oldest <= docs.tensorflow < found.tensorflow:
            oldest = max(found.oldest, docs.oldest or found.oldest)
            return Pins(docs.tensorflow, found.keras2 or docs.keras2 or docs.tensorflow < (2, 16),
                        f"{found.source}; {docs.source}", found.keras_version or docs.keras_version, oldest)
    return found


def pins_for(path: str) -> Optional[Pins]:
    """A notebook's own outputs (the versions it printed when it ran) first, then the project's pins."""
    try:
        if os.path.islink(path):
            resolved = Path(path).resolve()
            folder = resolved.parent
        else:  # a file that is no link resolves to its folder's real path: resolved once per folder
            folder = _real_folder(os.path.dirname(path), os.getcwd())
            resolved = folder / os.path.basename(path)
    except (OSError, RuntimeError, ValueError):
        return None
    if resolved.suffix != ".ipynb":
        return pins_for_folder(folder)
    # a notebook runs on its own kernel: the runtime a job script of its folder submits a trainer to is not its own
    project = pins_for_folder(folder, jobs=False)
    ran = notebook_versions(str(resolved))
    if ran is None and (project is None or (project.tensorflow is None and project.keras_version is None)):
        ran = _siblings_ran(folder)  # nothing pinned, nothing printed here: what the notebooks beside it ran
    if ran is None:
        return project
    if project is None:
        return ran
    return Pins(ran.tensorflow or project.tensorflow, ran.keras2 or (ran.tensorflow is None and project.keras2),
                "; ".join(x for x in (ran.source, project.source) if x), ran.keras_version or project.keras_version,
                ran.oldest if ran.tensorflow else project.oldest)


@lru_cache(maxsize=1024)
def _siblings_ran(folder: Path) -> Optional[Pins]:
    """What the notebooks of the same folder ran, for a notebook with nothing pinned and nothing printed of its own:
    the TensorFlow releases they printed (the range from the oldest to the newest: lmoroney/tfbook's chapter whose
    datasets notebook printed nothing beside siblings that printed 2.1.0 and 2.2.0, round 26: four misses), or
    multi-backend Keras (before 2.4) when those that show anything all printed 'Using TensorFlow backend.'
    (dipanjanS/hands-on-transfer-learning-with-python's never-run notebook, round 25: a TFL301 finding judged false).
    None when the siblings show nothing, or Keras 2.4+ beside multi-backend Keras."""
    found = _notebooks_ran(folder, "*.ipynb")
    level = folder
    for _ in range(3):
        if found is not None or level.parent == level or _project_root(level):
            break
        # none beside it shows anything: the book's other chapters (the parent folder's notebooks, up to two folders
        # down: `ch8/03_cifar/x.ipynb` beside `ch1/x.ipynb`), up to the repository's root and never above it
        level = level.parent
        found = _notebooks_ran(level, "*.ipynb", "*/*.ipynb", "*/*/*.ipynb")
    return found


_ROOT_MARKERS = (".git", "setup.py", "pyproject.toml", "requirements.txt", "README.md", "README.rst", "README",
                 "LICENSE", "setup.cfg")


def _project_root(folder: Path) -> bool:
    """`folder` looks like a repository's root: looking above it would read other projects' notebooks."""
    return any((folder / m).exists() for m in _ROOT_MARKERS)


def _notebooks_ran(folder: Path, *patterns: str) -> Optional[Pins]:
    """See `_siblings_ran`: the notebooks `patterns` find under `folder` (30 at most). Releases that span more than
    one era (1.x beside 2.x, or more than three minor releases apart) say nothing about one notebook."""
    try:
        books = sorted({p for pattern in patterns for p in folder.glob(pattern)})[:30]
    except OSError:
        return None
    releases: list[tuple[int, int]] = []
    old_keras = None
    newer_keras = False
    for nb in books:
        ran = notebook_versions(str(nb))
        if ran is None or not ran.source.startswith("notebook output"):
            continue  # what a sibling installs or says applies to its own kernel (a hub tutorial's `pip install
            # "tensorflow<2.9.0"` is not its folder's: 2 TFL102 findings judged false); what they printed ran
        if ran.tensorflow is not None:
            releases.append(ran.tensorflow)
        elif ran.keras_version is not None and ran.keras_version < (2, 4):
            old_keras = ran
        else:
            newer_keras = True  # a Keras release printed alone (`keras==2.4.3`): no TensorFlow release of its own
    if releases:
        low, high = min(releases), max(releases)
        if low[0] != high[0] or high[1] - low[1] > 3:
            return None
        return pins_of_text([("the folder's notebooks printed",
                              f"tensorflow>={low[0]}.{low[1]},<={high[0]}.{high[1]}.999")])
    return None if newer_keras else old_keras  # multi-backend Keras beside a newer one: the notebooks differ


@lru_cache(maxsize=4096)
def _real_folder(folder: str, cwd: str) -> Path:
    """The real path of a folder (`cwd`: what a relative one is relative to)."""
    return Path(cwd, folder).resolve()


_VERSION_ATTR = re.compile(r"\b(tf|tensorflow|keras)\s*\.\s*__version__\b")
_OUTPUT_VERSION = re.compile(r"(?<![\d.])(\d+\.\d+\.\d+)(?:[-.]?(?:rc|dev|post)\d*)?(?!\d)(?!\.\d)")
_ANY_VERSION_ATTR = re.compile(r"\b(\w+)\s*\.\s*__version__\b")


def notebook_versions(path: str) -> Optional[Pins]:
    try:
        st = Path(path).stat()
    except OSError:
        return None
    return _notebook_versions(path, st.st_mtime_ns, st.st_size)


@lru_cache(maxsize=1024)
def _notebook_versions(path: str, mtime_ns: int, size: int) -> Optional[Pins]:
    """The TensorFlow / Keras versions a notebook printed when it last ran: a code cell that shows exactly one of
    `tf.__version__` / `keras.__version__` and whose output holds a version (`'2.0.8'`). What ran beats what a
    folder pins (a textbook's first-edition notebooks ran Keras 2.0.8 whatever the repository's newer pins say)."""
    import json

    if size > 50_000_000:
        return None
    try:
        p = Path(path)
        nb = json.loads(p.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return None
    texts: list[tuple[str, str]] = []
    seen: set[str] = set()
    meta = nb.get("metadata") if isinstance(nb, dict) and isinstance(nb.get("metadata"), dict) else {}
    env = meta.get("environment") if isinstance(meta.get("environment"), dict) else {}
    image = _GCP_IMAGE.search(f"{env.get('name', '')} {env.get('uri', '')}")
    cells = nb.get("cells") if isinstance(nb, dict) else None
    for cell in cells if isinstance(cells, list) else []:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        src = cell.get("source")
        src = "".join(src) if isinstance(src, list) else src if isinstance(src, str) else ""
        if "keras" not in seen and "import" in src and "keras" in src \
                and any("Using TensorFlow backend." in t for t in _output_texts(cell)):
            # what multi-backend Keras (before 2.4) prints on import: the notebook ran standalone Keras 2.0-2.3
            # (Coursera's and the one-pixel-attack notebooks; a TFL301 finding there judged false in round 18)
            seen.add("keras")
            texts.append(("notebook output 'Using TensorFlow backend.'", "keras<2.4"))
        if "tensorflow" not in seen and _COLAB_TF1.search(src):
            seen.add("tensorflow")  # Colab's `%tensorflow_version 1.x`: the notebook runs TF 1.15
            texts.append(("notebook magic %tensorflow_version 1.x", "tensorflow==1.15"))
            continue
        if "%watermark" in src:  # `%watermark -p tensorflow`: one "name: version" line per package
            for kind, version in _watermarks(cell):
                if kind not in seen:
                    seen.add(kind)
                    texts.append(("notebook output", f"{kind}=={version}"))
            continue
        kinds = {"keras" if m.group(1) == "keras" else "tensorflow" for m in _VERSION_ATTR.finditer(src)}
        if len({m.group(1) for m in _ANY_VERSION_ATTR.finditer(src)}) != 1:
            continue  # `tfgnn.__version__` beside `tf.__version__`: which printed version is whose is not known
        if len(kinds) != 1 or kinds <= seen:
            continue
        for text in _output_texts(cell):
            found = _OUTPUT_VERSION.findall(text)
            m = _OUTPUT_VERSION.search(text) if len(set(found)) == 1 else None  # "TF-GNN 1.0.2 under TF 2.15.0": ambiguous
            if m:
                kind = kinds.pop()
                seen.add(kind)
                texts.append(("notebook output", f"{kind}=={m.group(1)}"))
                break
    if "tensorflow" not in seen:  # a cell that installs its TensorFlow (`!pip install -q tensorflow==2.3`, tf-nightly)
        installs = pip_installs("\n".join(_pip_lines(cells if isinstance(cells, list) else [])))
        tf = [f"{name}{spec}" for name, spec in requirements(installs) if name in TF_PACKAGES and spec]
        if tf:  # (tf-nightly became a `>=` spec)
            seen.add("tensorflow")
            texts.append(("notebook pip install", "\n".join(tf)))
    if "tensorflow" not in seen:  # the release its text names in words: "# Tested with TensorFlow 2.1.0" in a code
        # cell, "This notebook requires TensorFlow 2.4 or later" in a markdown cell (tensorflow/workshops' AMLD
        # exercise notebooks say only so, and print no version: 4 misses in round 20)
        prose = prose_pins("\n".join(_prose_lines(cells if isinstance(cells, list) else [])))
        if prose:
            seen.add("tensorflow")
            texts.append(("notebook text", prose))
    if image and "tensorflow" not in seen:  # saved on a Google Cloud notebook image (`tf22-cpu.2-2`), and no
        # printed version says otherwise (a version printed is what ran; the image may have been swapped since)
        texts.append(("notebook environment", f"tensorflow=={image.group(1)}.{image.group(2)}"))
    return pins_of_text(texts) if texts else None


_COLAB_TF1 = re.compile(r"^\s*%tensorflow_version\s+1(?:\.x|\.\d+)?\s*$", re.M)
_WATERMARK_LINE = re.compile(r"^\s*(tensorflow(?:-gpu|-cpu)?|keras)\s*:?\s+(\d+\.\d+\.\d+)\b", re.M)


def _prose_lines(cells: list) -> list[str]:
    """The words of a notebook: its markdown cells, and the comments of its code cells."""
    out = []
    for cell in cells:
        if not isinstance(cell, dict):
            continue
        src = cell.get("source")
        src = "".join(src) if isinstance(src, list) else src if isinstance(src, str) else ""
        if cell.get("cell_type") == "markdown":
            out.append(src)
        elif cell.get("cell_type") == "code":
            out += [ln.strip()[1:] for ln in src.splitlines() if ln.strip().startswith("#")]
    return out


def _pip_lines(cells: list) -> list[str]:
    """The `!pip install ...` / `%pip install ...` lines of a notebook's code cells."""
    out = []
    for cell in cells:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            src = cell.get("source")
            src = "".join(src) if isinstance(src, list) else src if isinstance(src, str) else ""
            out += [ln.strip()[1:] for ln in src.splitlines() if re.match(r"\s*[!%]\s*pip3?\s+install\b", ln)]
    return out


def _output_texts(cell: dict) -> list[str]:
    """The text of each output of a code cell (a stream's `text` or a result's `text/plain`)."""
    out = []
    for o in cell.get("outputs") or []:
        if not isinstance(o, dict):
            continue
        data = o.get("data") if isinstance(o.get("data"), dict) else {}
        text = o.get("text", data.get("text/plain", ""))
        out.append("".join(text) if isinstance(text, list) else text if isinstance(text, str) else "")
    return out


def _watermarks(cell: dict) -> list[tuple[str, str]]:
    return [("keras" if m.group(1) == "keras" else "tensorflow", m.group(2))
            for text in _output_texts(cell) for m in _WATERMARK_LINE.finditer(text)]


# A file written against TF1: `tf.contrib`, or sessions/placeholders spelled on plain `tensorflow`, cannot run on
# TF2 at all; a file that imports `tensorflow.compat.v1` (or disables v2 behaviour) uses the TF1 API on either.
# (each searched with `_at_word_start`, as a leading `\b`; and `disable_v2_behavior()` anywhere)
_COMPAT_V1 = (re.compile(r"tensorflow\.compat\.v1\b"), re.compile(r"from\s+tensorflow\.compat\s+import\s+v1\b"),
              re.compile(r"tf\.compat\.v1\.(?:Session|InteractiveSession|placeholder|disable_eager_execution)\("))
_TF1_ONLY = re.compile(
    r"tf\.(?:(?:Session|InteractiveSession|placeholder|"
    r"global_variables_initializer|variable_scope|get_variable|get_default_graph|to_float|to_int32|random_normal|"
    r"truncated_normal|train\.\w*Optimizer|enable_eager_execution)\(|layers\.\w+\()"
)  # searched with `_at_word_start` (a leading `\b` would make the search try every position of the text)
# Modules of Keras 2 that Keras 3 removed: a file importing them runs Keras 2 (standalone or tf.keras), whatever
# the project pins (or fails to pin)
_KERAS2_ONLY = re.compile(
    r"keras\.(?:engine|legacy|backend\.tensorflow_backend|wrappers\.scikit_learn|"
    r"layers\.(?:convolutional|core|recurrent|normalization|merge|advanced_activations|pooling|embeddings|noise|local)|"
    r"utils\.(?:np_utils|generic_utils|multi_gpu_utils|training_utils|data_utils))\b"
)  # searched with `_at_word_start`, as `multi_gpu_model\b`
_MULTI_GPU_MODEL = re.compile(r"multi_gpu_model\b")
_WORD_CHAR = re.compile(r"\w")


def _at_word_start(pattern: re.Pattern, text: str) -> bool:
    """`pattern` (which starts with a literal word character) occurs in `text` at the start of a word: the same
    answer as searching `\\b` + pattern, several times faster, since a pattern that starts with a literal is found by
    its prefix while a leading `\\b` makes the regex engine try every position of the text."""
    m = pattern.search(text)
    while m is not None:
        start = m.start()
        if start == 0 or _WORD_CHAR.match(text, start - 1) is None:
            return True
        m = pattern.search(text, start + 1)
    return False


_STANDALONE_KERAS = re.compile(r"^\s*(?:import keras\b|from keras[.\s])", re.M)


def standalone_keras_import(text: str) -> bool:
    """`import keras` / `from keras...`: with Keras-2-only modules (keras2_style), multi-backend Keras 2, the Keras
    of TF1's graph mode, where `model.predict` is one session run and calling the model builds new graph ops."""
    return _STANDALONE_KERAS.search(text) is not None


def keras2_style(text: str) -> bool:
    """The file imports modules only Keras 2 has (`keras.engine`, `keras.layers.convolutional`, ...)."""
    return "keras" in text and (_at_word_start(_KERAS2_ONLY, text) or _at_word_start(_MULTI_GPU_MODEL, text))


def tf1_style(text: str) -> Optional[str]:
    """"tf1-runtime" (TF1-only names on plain `tensorflow`: only TF 1.x runs it), "tf1-api" (compat.v1: the TF1 API
    on any TensorFlow), or None."""
    if "tf" not in text and "tensorflow" not in text:
        return None
    if "contrib" in text and re.search(r"\btf\.contrib\.|\btensorflow\.contrib\b", text):
        return "tf1-runtime"
    if "disable_v2_behavior()" in text or ("compat" in text and any(_at_word_start(p, text) for p in _COMPAT_V1)):
        return "tf1-api"
    if _at_word_start(_TF1_ONLY, text):
        return "tf1-runtime"
    return None
