"""Nothing read from a cache can run code: the rule registry's cache is JSON, validated on load, and a planted
pickle where the old cache lived is never read (issue 26)."""
from __future__ import annotations

import json
import pickle

from test_cli import TF_MAP, run_tflint
from tflint.registry import (
    _rules_from_cache, _write_cache, build_registry, check_classes, code_fingerprint, registry_cache_file,
)


class _Planted:
    """Unpickling this writes a marker file: what a tampered cache restored in CI would do."""

    def __init__(self, marker: str) -> None:
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({self.marker!r}, 'w').write('pwned')",))


def _check(tmp_path, xdg):
    (tmp_path / "proj").mkdir(exist_ok=True)
    (tmp_path / "proj" / "m.py").write_text(TF_MAP)
    return run_tflint("check", "--no-cache", "--output-format", "json", "m.py", cwd=tmp_path / "proj",
                      env={"XDG_CACHE_HOME": str(xdg)})


def _codes(p):
    return [f["code"] for f in json.loads(p.stdout)]


def test_a_planted_pickle_where_the_old_cache_lived_is_never_loaded(tmp_path):
    xdg = tmp_path / "xdg"
    (xdg / "tflint").mkdir(parents=True)
    marker = tmp_path / "marker"
    planted = xdg / "tflint" / f"registry-{code_fingerprint()}.pickle"
    planted.write_bytes(pickle.dumps(_Planted(str(marker))))
    # the plant is real: loading it does write the marker
    pickle.loads(planted.read_bytes())
    assert marker.exists()
    marker.unlink()

    p = _check(tmp_path, xdg)
    assert p.returncode == 1, p.stderr
    assert not marker.exists()
    assert _codes(p) == ["TFL101"]
    assert not planted.exists()  # the old cache is removed when the new one is written
    assert (xdg / "tflint" / f"registry-{code_fingerprint()}.json").is_file()


def _valid_cache(tmp_path):
    xdg = tmp_path / "xdg"
    first = _check(tmp_path, xdg)
    assert first.returncode == 1 and "warning" not in first.stderr, first.stderr
    [cache] = (xdg / "tflint").glob("registry-*.json")
    return xdg, cache, _codes(first)


def test_a_truncated_cache_is_ignored_with_one_warning_and_rebuilt(tmp_path):
    xdg, cache, expected = _valid_cache(tmp_path)
    good = cache.read_text()
    cache.write_text(good[: len(good) // 2])
    p = _check(tmp_path, xdg)
    assert _codes(p) == expected == ["TFL101"]
    warnings = [ln for ln in p.stderr.splitlines() if "warning" in ln]
    assert len(warnings) == 1 and "ignoring the rule cache" in warnings[0] and str(cache) in warnings[0]
    assert cache.read_text() == good  # rebuilt
    again = _check(tmp_path, xdg)
    assert "warning" not in again.stderr


def test_a_cache_of_wrong_shape_or_bad_rules_is_ignored(tmp_path):
    xdg, cache, expected = _valid_cache(tmp_path)
    data = json.loads(cache.read_text())
    bad = [
        b"\x80\x04\x95 not json at all",
        json.dumps({"version": 99, "rules": data["rules"]}).encode(),
        json.dumps({"version": data["version"], "rules": [{"path": "../../evil.yaml", "rule": data["rules"][0]["rule"]}]}).encode(),
        json.dumps({"version": data["version"], "rules": [{"path": "data/x.yaml", "rule": {"code": "TFL101"}}]}).encode(),
        json.dumps([1, 2, 3]).encode(),
    ]
    for content in bad:
        cache.write_bytes(content)
        p = _check(tmp_path, xdg)
        assert "Traceback" not in p.stderr, p.stderr
        assert _codes(p) == expected, content
        assert p.stderr.count("ignoring the rule cache") == 1, (content, p.stderr)


def test_the_cache_gives_the_same_rules_as_the_yaml(tmp_path):
    fresh = build_registry()
    target = tmp_path / "registry.json"
    _write_cache(target, list(fresh))
    cached = _rules_from_cache(target, check_classes())
    assert [m.to_json() for m in cached] == [m.to_json() for m in fresh]
    assert [(m.check, m.pattern, m.path) for m in cached] == [(m.check, m.pattern, m.path) for m in fresh]
    assert registry_cache_file().suffix == ".json"


def test_other_builds_caches_are_kept_up_to_a_few(tmp_path):
    """Two installs used in turn (a checkout and a virtualenv's tflint) keep their own registry caches; only the
    few most recently written other builds' caches stay, and pickles never do."""
    import os

    from tflint.registry import KEEP_OTHER_CACHES

    folder = tmp_path / "tflint"
    folder.mkdir()
    others = []
    for i in range(KEEP_OTHER_CACHES + 2):
        f = folder / f"registry-other{i}.json"
        f.write_text("{}")
        os.utime(f, (1_000_000 + i, 1_000_000 + i))
        others.append(f)
    (folder / "registry-old.pickle").write_bytes(b"x")
    _write_cache(folder / "registry-mine.json", list(build_registry().rules.values()))
    kept = sorted(p.name for p in folder.glob("registry-*"))
    newest = sorted(f.name for f in others[-KEEP_OTHER_CACHES:])
    assert kept == sorted(["registry-mine.json", *newest])
