"""A config is refused, in one ConfigError line, when its YAML aliases expand beyond a bound, when it nests too deep,
or when the file is above the config size limit (issue 27 point 4)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.config import load_config
from pipelines.config.load import MAX_ALIASES, MAX_DEPTH, load_yaml
from pipelines.errors import ConfigError

HEAD = "cluster: c1\nwarehouse: /tmp/w\nbrokers:\n  - broker_id: 1\n    log_dirs: [/tmp/logs]\n    storage_options:\n"


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """The billion-laughs shape inside the free-form ``storage_options`` mapping: ``width ** levels`` leaves."""
    lines = ['      l0: &l0 [' + ", ".join(['"lol"'] * width) + "]"]
    for i in range(1, levels):
        lines.append(f"      l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    return HEAD + "\n".join(lines) + "\n"


def test_an_alias_bomb_in_a_free_form_mapping_is_refused_while_composed(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(alias_bomb())
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert "refused: YAML aliases expand to more than 100000 nodes" in message and "\n" not in message


def test_a_few_aliases_that_expand_little_still_load(tmp_path: Path) -> None:
    path = tmp_path / "ok.yaml"
    path.write_text(HEAD + "      base: &base {region: eu}\n      again: *base\n")
    cfg = load_config(path)
    assert cfg.brokers[0].storage_options["again"] == {"region": "eu"}


def test_too_many_aliases_are_refused() -> None:
    text = "a: &a 1\nb: [" + ", ".join(["*a"] * (MAX_ALIASES + 1)) + "]\n"
    with pytest.raises(Exception, match=f"more than {MAX_ALIASES} aliases"):
        load_yaml(text)


@pytest.mark.parametrize("style", ["flow", "block"])
def test_a_10k_deep_config_is_refused_without_a_recursion_error(tmp_path: Path, style: str) -> None:
    depth = 10_000
    if style == "flow":
        body = "      deep: " + "[" * depth + "]" * depth + "\n"
    else:
        body = "".join(" " * (6 + i) + f"k{i}:\n" for i in range(depth // 10)) + " " * (6 + depth // 10) + "v\n"
    path = tmp_path / f"{style}.yaml"
    path.write_text(HEAD + body)
    with pytest.raises(ConfigError, match=f"nested deeper than {MAX_DEPTH} levels at line"):
        load_config(path)


def test_a_config_above_the_size_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "huge.yaml"
    with open(path, "wb") as f:
        f.write(HEAD.encode())
        f.truncate(8 << 30)  # 8 GiB, sparse
    with pytest.raises(ConfigError, match="larger than the 4194304-byte limit for a config file"):
        load_config(path)
