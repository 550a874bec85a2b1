"""Every refusal a user can meet from the command line names its real cause (issue 30 point 6): each case builds
its own realistic bad input (a config, a plan file, a key, a broker id), runs ``logdir-gc`` on it, and checks the
one line it prints (the cause's own words, the object it is about), its documented exit code, and no traceback.

No Spark: every one of these refusals happens before a JVM would start. The list of messages, where each is raised
and which case meets it, is in the docs fragment of this change (and the commit log)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "execute"))

from exec_world import GARBAGE, World, build_world, make_plan

from pipelines.cli import exit_codes as ec
from pipelines.cli.main import main
from pipelines.plan import approval

REPO = Path(__file__).resolve().parents[2]


def run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    out, err = capsys.readouterr()
    return int(exc.value.code or 0), out, err


def the_line(code: int, err: str) -> str:
    """The one line a refusal prints: its own line, or click's ``Error:`` line of a usage error (exit 2). A warning
    line beside it (``logdir-gc ...: warning: ...``) is advice, not the refusal."""
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if line.strip() and ": warning: " not in line]
    if code == ec.USAGE and any(line.startswith("Error:") for line in lines):
        return next(line for line in lines if line.startswith("Error:"))
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture(scope="module")
def approved(tmp_path_factory: pytest.TempPathFactory) -> World:
    """A broker host whose plan ``plan-1`` (three items on broker 1) is approved and signed."""
    return build_world(tmp_path_factory.mktemp("approved"))


@pytest.fixture(scope="module")
def proposed(tmp_path_factory: pytest.TempPathFactory) -> World:
    """A broker host whose plan ``plan-1`` is registered, proposed, not yet approved."""
    w = build_world(tmp_path_factory.mktemp("proposed"), approve_plan=False)
    approval.register_plan(w.store, w.plan, actor=w.plan.created_by, policy=w.config.policy)
    return w


@pytest.fixture(autouse=True)
def _no_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)


def config_file(w: World, tmp: Path, change: Callable[[dict], object] = lambda d: None, name: str = "c.yaml") -> str:
    """The world's config, changed by ``change``, as a file only root may write (as a host's config is)."""
    data = w.config.model_dump(mode="json")
    change(data)
    path = tmp / name
    path.write_text(yaml.safe_dump(data))
    path.chmod(0o600)
    return str(path)


# ---- a config file a user wrote wrong: exit 4, the file and the key or line named ---------------------------------

CONFIG = {
    "missing file": (None, "cannot read config {path}: No such file or directory"),
    "bad YAML": ("cluster: [c1\nwarehouse: /w\n",
                 "not valid YAML (line 2, column 10: expected ',' or ']', but got ':')"),
    "not UTF-8": (b"cluster: caf\xe9\nwarehouse: /w\n", "not UTF-8 text (byte 12"),
    "empty file": ("", "expected a mapping of keys (cluster:, warehouse:, ...) at the top level, found nothing"),
    "a list at the top": ("- cluster: c1\n", "expected a mapping of keys (cluster:, warehouse:, ...) at the top "
                          "level, found list"),
    "unknown key": ("cluster: c1\nwarehouse: /w\nbrokerz: []\n", "brokerz: unknown key (conf/example.yaml shows "
                    "every key)"),
    "missing key": ("cluster: c1\n", "warehouse: required key is missing"),
    "bad broker id": ("cluster: c1\nwarehouse: /w\nbrokers: [{broker_id: one, log_dirs: [/k]}]\n",
                      "brokers.0.broker_id: Input should be a valid integer"),
    "bad duration": ("cluster: c1\nwarehouse: /w\ndetect: {grace_ms: soon}\n",
                     "detect.grace_ms: not a duration (use e.g. 90s, 15m, 24h, 7d): 'soon'"),
    "grace below floor": ("cluster: c1\nwarehouse: /w\ndetect: {grace_ms: 5m}\n",
                          "detect.grace_ms: grace must be at least 60 minutes (floor)"),
    "duplicate broker": ("cluster: c1\nwarehouse: /w\nbrokers: [{broker_id: 1, log_dirs: [/a]}, "
                         "{broker_id: 1, log_dirs: [/b]}]\n",
                         "config.yaml: brokers: broker_id 1 appears more than once (each broker_id may appear only "
                         "once)"),
    "metadata without source": ("cluster: c1\nwarehouse: /w\nmetadata: {kind: metadata_log}\n",
                                "metadata.source is required when metadata.kind is metadata_log"),
    "bad zookeeper_connect": ("cluster: c1\nwarehouse: /w\nmetadata: {kind: zookeeper, zookeeper_connect: zk1}\n",
                              "zookeeper_connect 'zk1' is not host:port[,host:port...][/chroot]"),
    "quarantine name with a slash": ("cluster: c1\nwarehouse: /w\nexecutor: {quarantine_dir_name: a/b}\n",
                                     "executor.quarantine_dir_name: 'a/b' must be a plain directory name"),
    "relative ssh_keygen": ("cluster: c1\nwarehouse: /w\nexecutor: {ssh_keygen: ssh-keygen}\n",
                            "executor.ssh_keygen: 'ssh-keygen' must be an absolute path"),
}


@pytest.mark.parametrize("case", sorted(CONFIG))
def test_a_bad_config_names_the_file_and_the_problem(case: str, tmp_path: Path, capsys) -> None:
    text, words = CONFIG[case]
    path = tmp_path / "config.yaml"
    if text is not None:
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        path.chmod(0o600)
    code, _, err = run(capsys, ["purge", "--broker", "1", "--config", str(path)])
    line = the_line(code, err)
    assert code == ec.CONFIG, err
    assert line.startswith(f"logdir-gc: error: {path}: ") or line.startswith("logdir-gc: error: cannot read config")
    assert words.format(path=path) in line


# ---- the broker a command acts on: the config lists none, several, or others --------------------------------------


@dataclass(frozen=True)
class Case:
    argv: Callable[[World, Path], list[str]]
    code: int
    words: tuple[str, ...]
    world: str = "approved"


def _no_brokers(w: World, tmp: Path) -> str:
    return config_file(w, tmp, lambda d: d.__setitem__("brokers", []))


def _two_brokers(w: World, tmp: Path) -> str:
    (tmp / "kafka-logs-2").mkdir()
    return config_file(w, tmp, lambda d: d["brokers"].append({"broker_id": 2, "log_dirs": [str(tmp / "kafka-logs-2")]}))


def _log_dir_typo(w: World, tmp: Path) -> str:
    """The config with its log dir misspelt (``kafka-log`` for ``kafka-logs``), in a directory that exists."""
    return config_file(w, tmp, lambda d: d["brokers"][0].update(log_dirs=[str(w.log_dir.parent / "kafka-log")]))


def _log_dir_copy_without_meta(w: World, tmp: Path) -> str:
    """A copy of the broker's log dir whose meta.properties is gone (a disk Kafka never formatted)."""
    import shutil

    copy = tmp / "data" / "kafka-logs"
    shutil.copytree(w.log_dir, copy, symlinks=True)
    (copy / "meta.properties").unlink()
    return config_file(w, tmp, lambda d: d["brokers"][0].update(log_dirs=[str(copy)]))


def _plan_file(tmp: Path, text: str) -> str:
    path = tmp / "plan.json"
    path.write_text(text)
    return str(path)


def _tampered(w: World, tmp: Path) -> str:
    """The approved plan's file with an item's bytes halved and its recorded hash kept."""
    data = json.loads(w.plan.to_json())
    data["items"][0]["bytes"] //= 2
    return _plan_file(tmp, json.dumps(data))


def _two_cluster_warehouse(w: World, tmp: Path) -> str:
    """A warehouse holding the plans of clusters c1 and c2 (one warehouse for several clusters)."""
    from pipelines.tables.rust_engine import RustTableStore

    store = RustTableStore(str(tmp / "warehouse"))
    for cluster in ("c1", "c2"):
        plan = w.plan.model_copy(update={"cluster": cluster, "plan_id": f"plan-{cluster}"}).with_hash()
        approval.register_plan(store, plan, actor=plan.created_by, policy=w.config.policy)
    return str(tmp / "warehouse")


def _not_a_key(tmp: Path) -> str:
    path = tmp / "id_ed25519"
    path.write_text("my key is in the vault\n")
    return str(path)


def _public_key_only(tmp: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / "k")], check=True)
    (tmp / "k").unlink()
    return str(tmp / "k.pub")


def _not_executable(tmp: Path) -> str:
    """A copy of a real ssh-keygen, owned by root as a trust file must be, that no one may execute."""
    path = tmp / "bin" / "ssh-keygen"
    path.parent.mkdir()
    path.write_bytes(Path("/usr/bin/ssh-keygen").read_bytes())
    path.chmod(0o644)
    return str(path)


def _executor(**changes: object) -> Callable[[dict], object]:
    return lambda d: d["executor"].update(changes)


CASES: dict[str, Case] = {
    # the broker
    "purge, config without brokers": Case(
        lambda w, t: ["purge", "--execute", "--config", _no_brokers(w, t)], ec.CONFIG,
        ("the config lists no brokers", "name this host's broker under `brokers:`")),
    "restore, config without brokers": Case(
        lambda w, t: ["restore", "plan-1", "--config", _no_brokers(w, t)], ec.CONFIG, ("the config lists no brokers",)),
    "apply --broker, config without brokers": Case(
        lambda w, t: ["apply", "plan-1", "--broker", "1", "--config", _no_brokers(w, t)], ec.PRECONDITION,
        ("broker 1 is not in the config's brokers (it lists none): add broker 1 under `brokers:`",)),
    "purge --broker, config without brokers": Case(
        lambda w, t: ["purge", "--broker", "1", "--config", _no_brokers(w, t)], ec.PRECONDITION,
        ("broker 1 is not in the config's brokers (it lists none)",)),
    "apply, unknown --broker": Case(
        lambda w, t: ["apply", "plan-1", "--broker", "7", "--config", config_file(w, t)], ec.PRECONDITION,
        ("broker 7 is not in the config's brokers (it lists 1): give this host's broker id with --broker",)),
    "restore, unknown --broker": Case(
        lambda w, t: ["restore", "plan-1", "--broker", "7", "--config", config_file(w, t)], ec.PRECONDITION,
        ("broker 7 is not in the config's brokers (it lists 1)",)),
    "purge, unknown --broker": Case(
        lambda w, t: ["purge", "--broker", "7", "--config", config_file(w, t)], ec.PRECONDITION,
        ("broker 7 is not in the config's brokers (it lists 1)",)),
    "purge, two brokers and no --broker": Case(
        lambda w, t: ["purge", "--config", _two_brokers(w, t)], ec.CONFIG,
        ("the config lists 2 brokers (1, 2); say which one with --broker ID",)),
    "restore, two brokers and no --broker": Case(
        lambda w, t: ["restore", "plan-1", "--config", _two_brokers(w, t)], ec.CONFIG,
        ("the config lists 2 brokers (1, 2)",)),
    "apply, a log dir missing (config typo)": Case(
        lambda w, t: ["apply", "plan-1", "--broker", "1", "--config", _log_dir_typo(w, t)], ec.PRECONDITION,
        ("no readable meta.properties with a cluster.id in broker 1's log dirs (log dir ",
         "kafka-log: No such file or directory)")),
    "purge, a log dir missing (config typo)": Case(
        lambda w, t: ["purge", "--broker", "1", "--config", _log_dir_typo(w, t)], ec.PRECONDITION,
        ("cannot open the log dir ", "kafka-log without following links (No such file or directory)")),
    "restore, a log dir missing (config typo)": Case(
        lambda w, t: ["restore", "plan-1", "--broker", "1", "--config", _log_dir_typo(w, t)], ec.PRECONDITION,
        ("cannot open the log dir ", "kafka-log without following links (No such file or directory)")),
    "apply, a log dir without meta.properties": Case(
        lambda w, t: ["apply", "plan-1", "--broker", "1", "--config", _log_dir_copy_without_meta(w, t)],
        ec.PRECONDITION, ("in broker 1's log dirs (", "kafka-logs/meta.properties: No such file or directory)")),
    "apply, a remote log dir": Case(
        lambda w, t: ["apply", "plan-1", "--broker", "1", "--config", config_file(
            w, t, lambda d: d["brokers"][0].update(log_dirs=["sftp://broker1/var/lib/kafka"]))], ec.PRECONDITION,
        ("log dir sftp://broker1/var/lib/kafka is not local; run the executor on the broker host",)),
    "apply without --config": Case(
        lambda w, t: ["apply", "plan-1", "--broker", "1", "--warehouse", str(w.store.warehouse)], ec.CONFIG,
        ("this command needs --config FILE",)),
    "plans list without a warehouse": Case(lambda w, t: ["plans", "list"], ec.CONFIG,
                                           ("give --config FILE or --warehouse DIR",)),
    # the plan
    "apply, unknown plan": Case(
        lambda w, t: ["apply", "plan-9", "--broker", "1", "--config", config_file(w, t)], ec.POLICY,
        ("no plan 'plan-9' in gc_plans",)),
    "restore, unknown plan": Case(
        lambda w, t: ["restore", "plan-9", "--broker", "1", "--config", config_file(w, t)], ec.POLICY,
        ("no plan 'plan-9' in gc_plans",)),
    "plans show, unknown plan": Case(
        lambda w, t: ["plans", "show", "plan-9", "--warehouse", str(w.store.warehouse)], ec.POLICY,
        ("no plan 'plan-9' in gc_plans",)),
    "plans approve, unknown plan": Case(
        lambda w, t: ["plans", "approve", "plan-9", "--by", "reviewer", "--config", config_file(w, t)], ec.POLICY,
        ("no plan 'plan-9' in gc_plans",)),
    "--plan-file missing": Case(
        lambda w, t: ["apply", "plan-1", "--broker", "1", "--plan-file", str(t / "plan.json"), "--config",
                      config_file(w, t)], ec.USAGE, ("'--plan-file'", "does not exist")),
    "--plan-file not JSON": Case(
        lambda w, t: ["apply", "plan-1", "--broker", "1", "--plan-file", _plan_file(t, "{plan-1}"), "--config",
                      config_file(w, t)], ec.POLICY,
        ("plan file", "is invalid or tampered: Invalid JSON: key must be a string at line 1 column 2")),
    "--plan-file not a plan": Case(
        lambda w, t: ["apply", "plan-1", "--broker", "1", "--plan-file", _plan_file(t, '{"items": []}'),
                      "--config", config_file(w, t)], ec.POLICY,
        ("is invalid or tampered: plan_id: Field required (and ",)),
    "--plan-file edited": Case(
        lambda w, t: ["apply", "plan-1", "--broker", "1", "--plan-file", _tampered(w, t), "--config",
                      config_file(w, t)], ec.POLICY,
        ("is invalid or tampered: content_hash does not match the plan's content",)),
    "--plan-file of other content": Case(
        lambda w, t: ["apply", "plan-1", "--broker", "1", "--plan-file",
                      _plan_file(t, make_plan(w.log_dir, GARBAGE[:1]).to_json()), "--config", config_file(w, t)],
        ec.POLICY, ("does not hash to the approved content sha256:",)),
    "plans register, not JSON": Case(
        lambda w, t: ["plans", "register", _plan_file(t, "not json"), "--warehouse", str(w.store.warehouse)],
        ec.POLICY, ("is invalid or tampered: Invalid JSON",)),
    "apply, plan not approved": Case(
        lambda w, t: ["apply", "plan-1", "--broker", "1", "--config", config_file(w, t)], ec.POLICY,
        ("[not_approved] plan plan-1 is proposed, not approved",), world="proposed"),
    "apply --dry-run --execute": Case(
        lambda w, t: ["apply", "plan-1", "--broker", "1", "--dry-run", "--execute", "--config", config_file(w, t)],
        ec.USAGE, ("--dry-run and --execute are exclusive",)),
    # the warehouse
    "report, unknown --cluster on a two-cluster warehouse": Case(
        lambda w, t: ["report", "--warehouse", _two_cluster_warehouse(w, t), "--cluster", "c3", "--out",
                      str(t / "r.html")], ec.CONFIG,
        ("no cluster 'c3' in this warehouse (it holds: c1, c2); check --cluster and --warehouse",)),
    "report, empty warehouse": Case(
        lambda w, t: ["report", "--warehouse", str(t), "--out", str(t / "r.html")], ec.CONFIG,
        ("no cluster in this warehouse (no crawl run, log dir, finding or plan): check --warehouse, or run "
         "`logdir-gc run` first",)),
    # durations
    "purge --older-than not a duration": Case(
        lambda w, t: ["purge", "--broker", "1", "--older-than", "a week", "--config", config_file(w, t)], ec.USAGE,
        ("Invalid value for '--older-than': not a duration",)),
    "purge --older-than below the floor": Case(
        lambda w, t: ["purge", "--broker", "1", "--older-than", "10m", "--config", config_file(w, t)], ec.POLICY,
        ("[purge_retention_floor] retention 600000 ms is below the host's floor "
         "executor.purge_retention_floor_ms = 3600000 ms",)),
    "plans approve --valid-for not a duration": Case(
        lambda w, t: ["plans", "approve", "plan-1", "--by", "reviewer", "--valid-for", "1 day", "--config",
                      config_file(w, t)], ec.USAGE, ("Invalid value for '--valid-for': not a duration",),
        world="proposed"),
    # policy at approval
    "plans approve over the plan's item budget": Case(
        lambda w, t: ["plans", "approve", "plan-1", "--by", "reviewer", "--config",
                      config_file(w, t, lambda d: d["policy"].update(max_plan_items=2))], ec.POLICY,
        ("[max_plan_items] plan plan-1 has 3 items, budget is 2 (policy.max_plan_items)",), world="proposed"),
    "plans approve over a broker's byte budget": Case(
        lambda w, t: ["plans", "approve", "plan-1", "--by", "reviewer", "--config",
                      config_file(w, t, lambda d: d["policy"].update(max_broker_bytes=1000))], ec.POLICY,
        ("[max_broker_bytes] plan plan-1: broker 1 reclaims", "budget is 1000 (policy.max_broker_bytes)"),
        world="proposed"),
    "plans approve with a grace below the policy's": Case(
        lambda w, t: ["plans", "approve", "plan-1", "--by", "reviewer", "--config",
                      config_file(w, t, lambda d: d["detect"].update(grace_ms="2h"))], ec.POLICY,
        ("[min_grace] plan plan-1 was detected with grace 7200000 ms (detect.grace_ms), policy minimum is "
         "86400000 ms (policy.min_grace_ms)",), world="proposed"),
    "plans approve by its author": Case(
        lambda w, t: ["plans", "approve", "plan-1", "--by", "detector", "--config", config_file(w, t)], ec.POLICY,
        ("[approver_differs_from_author] detector", "plan plan-1 and cannot approve it"), world="proposed"),
    # signing keys
    "plans approve, --key missing": Case(
        lambda w, t: ["plans", "approve", "plan-1", "--by", "reviewer", "--key", str(t / "id_ed25519"), "--config",
                      config_file(w, t)], ec.CONFIG, ("--key", "id_ed25519: no such key file"), world="proposed"),
    "plans approve, --key not a key": Case(
        lambda w, t: ["plans", "approve", "plan-1", "--by", "reviewer", "--key", _not_a_key(t), "--config",
                      config_file(w, t)], ec.CONFIG,
        ("ssh-keygen could not sign with", "id_ed25519: it is not an OpenSSH key: give a private key file, or a "
         ".pub whose key is in ssh-agent"),
        world="proposed"),
    "plans approve, --key a .pub not in ssh-agent": Case(
        lambda w, t: ["plans", "approve", "plan-1", "--by", "reviewer", "--key", _public_key_only(t), "--config",
                      config_file(w, t)], ec.CONFIG,
        ("k.pub: it is a public key and its private key is not in ssh-agent: ssh-add it, or give the private key "
         "file",),
        world="proposed"),
    "plans approve, no --key and no ssh-agent": Case(
        lambda w, t: ["plans", "approve", "plan-1", "--by", "reviewer", "--config", config_file(w, t)], ec.CONFIG,
        ("no key to sign with: give --key PATH, or start ssh-agent and ssh-add your key",), world="proposed"),
    # the host's trust files and controller metadata
    "apply, allowed_signers missing": Case(
        lambda w, t: ["apply", "plan-1", "--broker", "1", "--config",
                      config_file(w, t, _executor(allowed_signers=str(t / "allowed_signers")))], ec.CONFIG,
        ("executor.allowed_signers:", "allowed_signers does not exist")),
    "apply, allowed_signers not set": Case(
        lambda w, t: ["apply", "plan-1", "--broker", "1", "--config",
                      config_file(w, t, _executor(allowed_signers=None))], ec.CONFIG,
        ("executor.allowed_signers is not set, so no signed approval can be checked",)),
    "apply, ssh-keygen missing": Case(
        lambda w, t: ["apply", "plan-1", "--broker", "1", "--config",
                      config_file(w, t, _executor(ssh_keygen=str(t / "bin" / "ssh-keygen")))], ec.CONFIG,
        ("executor.ssh_keygen:", "ssh-keygen does not exist")),
    "apply, kafka_user unknown": Case(
        lambda w, t: ["apply", "plan-1", "--broker", "1", "--config",
                      config_file(w, t, _executor(kafka_user="kafka-no-such-user"))], ec.CONFIG,
        ("executor.kafka_user: no user 'kafka-no-such-user' on this host",)),
    "apply, ssh-keygen not executable": Case(
        lambda w, t: ["apply", "plan-1", "--broker", "1", "--config",
                      config_file(w, t, _executor(ssh_keygen=_not_executable(t)))], ec.POLICY,
        ("[ssh_keygen_permissions]", "ssh-keygen is not executable")),
    "apply, metadata source missing": Case(
        lambda w, t: ["apply", "plan-1", "--broker", "1", "--config",
                      config_file(w, t, lambda d: d["metadata"].update(source=str(t / "__cluster_metadata-0")))],
        ec.CONFIG, ("metadata.source:", "__cluster_metadata-0 does not exist")),
    "apply, metadata kind none": Case(
        lambda w, t: ["apply", "plan-1", "--broker", "1", "--config",
                      config_file(w, t, lambda d: d.__setitem__("metadata", {"kind": "none"}))], ec.PRECONDITION,
        ("[controller_recheck] metadata.kind is none",)),
    "apply, ZooKeeper unreachable": Case(
        lambda w, t: ["apply", "plan-1", "--broker", "1", "--config", config_file(w, t, lambda d: d.__setitem__(
            "metadata", {"kind": "zookeeper", "zookeeper_connect": "127.0.0.1:9", "zookeeper_timeout_ms": 1000}))],
        ec.PRECONDITION, ("[controller_recheck] cannot re-read controller metadata from ZooKeeper 127.0.0.1:9",)),
    # commands without a config
    "run, --logdir without a broker id": Case(
        lambda w, t: ["run", "--logdir", f"kafka={w.log_dir}", "--warehouse", str(t / "wh")], ec.CONFIG,
        ("--logdir expects BROKER_ID=URL, got 'kafka=",)),
    "run without --config or --logdir": Case(lambda w, t: ["run"], ec.CONFIG,
                                             ("give --config FILE, or at least one --logdir BROKER=URL",)),
    "run without --warehouse": Case(lambda w, t: ["run", "--logdir", f"1={w.log_dir}"], ec.CONFIG,
                                    ("--warehouse DIR is required without --config",)),
    "metadata dump-zk without an ensemble": Case(
        lambda w, t: ["metadata", "dump-zk", "--out", str(t / "zk.json")], ec.CONFIG,
        ("give --zookeeper-connect or a --config with metadata.zookeeper_connect",)),
    "metadata dump-zk, bad connect string": Case(
        lambda w, t: ["metadata", "dump-zk", "--zookeeper-connect", "zk1", "--out", str(t / "zk.json")], ec.CONFIG,
        ("zookeeper_connect 'zk1' is not host:port",)),
    "simulate, no brokers": Case(
        lambda w, t: ["simulate", "--out", str(t / "sim"), "--brokers", "0"], ec.USAGE,
        ("logdir-gc simulate: brokers must be >= 1",)),
    "simulate, --out under a file": Case(
        lambda w, t: ["simulate", "--out", str(w.log_dir / "meta.properties" / "sim")], ec.UNREADABLE,
        ("Not a directory", "meta.properties/sim")),
    "metadata show, missing path": Case(
        lambda w, t: ["metadata", "show", str(t / "__cluster_metadata-0")], ec.UNREADABLE,
        ("logdir-gc metadata show: cannot read", "__cluster_metadata-0", "no such file or directory")),
    "metadata show --records --json": Case(
        lambda w, t: ["metadata", "show", str(t), "--records", "--json"], ec.USAGE,
        ("--records dumps records; it does not combine with --json",)),
    "inspect, --storage-option without =": Case(
        lambda w, t: ["inspect", str(w.log_dir), "--storage-option", "username"], ec.USAGE,
        ("Invalid value for --storage-option: expected KEY=VALUE, got 'username'",)),
    "inspect, missing log dir": Case(
        lambda w, t: ["inspect", str(t / "kafka-logs")], ec.UNREADABLE,
        ("logdir-gc inspect: cannot read", "kafka-logs: No such file or directory")),
    "inventory, --out in a missing dir": Case(
        lambda w, t: ["inventory", str(w.log_dir), "--out", str(t / "no-dir" / "inv.parquet")], ec.UNREADABLE,
        ("logdir-gc inventory: cannot write", "no-dir/inv.parquet: No such file or directory")),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_refusal_names_its_real_cause(name: str, request: pytest.FixtureRequest, tmp_path: Path,
                                           capsys) -> None:
    case = CASES[name]
    world = request.getfixturevalue(case.world)
    code, _, err = run(capsys, case.argv(world, tmp_path))
    line = the_line(code, err)
    assert code == case.code, err
    for words in case.words:
        assert words in line, line


def test_prestart_for_a_broker_the_config_does_not_list_says_which_it_lists(approved: World, tmp_path: Path,
                                                                           capsys) -> None:
    """prestart never blocks a broker start (exit 0) but still says why it did nothing."""
    code, out, err = run(capsys, ["prestart", "--broker", "7", "--config", config_file(approved, tmp_path)])
    assert code == 0 and "Traceback" not in err
    assert "broker 7 is not in the config's brokers (it lists 1)" in out


def test_a_warehouse_the_object_store_refuses_is_one_line_naming_the_store(tmp_path: Path) -> None:
    """No credentials anywhere (no variables, no profile, no instance metadata): the store refuses every request,
    which no retry can change. One line, exit 10, naming the warehouse and the cause."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "PYTHONPATH": str(REPO),
           "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": str(tmp_path / "none"),
           "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none")}
    done = subprocess.run([sys.executable, "-m", "pipelines.cli.main", "plans", "list", "--warehouse",
                           "s3://logdir-gc-no-such-bucket/wh"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert "Traceback" not in done.stderr, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert done.returncode == ec.UNAVAILABLE, done.stderr
    assert line.startswith("logdir-gc: error: the object store at s3://logdir-gc-no-such-bucket/wh failed the "
                           "request (not retried): "), line
    assert "credential" in line
