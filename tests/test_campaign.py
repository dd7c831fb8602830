import json
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml
from helpers import IMAGE, build_image

from perfsnake.campaign import load_campaign, load_campaigns
from perfsnake.errors import CampaignError
from perfsnake.machine import capabilities
from perfsnake.machine.sysinfo import online_cpus


def write(tmp_path, text, name="c.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def cmd_campaign(**extra):
    data = {
        "name": "t",
        "benchmark": {"type": "command", "command": "echo {x}", "metrics": {"v": r"(\d+)"}},
        "variables": {"x": [1, 2]},
    }
    data.update(extra)
    return yaml.safe_dump(data)


def test_cartesian_product_in_variable_order(tmp_path):
    text = cmd_campaign(variables={"x": [1, 2], "y": ["a", "b", "c"]})
    c = load_campaign(write(tmp_path, text))
    assert c.variables == ["x", "y"]
    assert [r.values for r in c.records][:4] == [
        {"x": 1, "y": "a"},
        {"x": 1, "y": "b"},
        {"x": 1, "y": "c"},
        {"x": 2, "y": "a"},
    ]
    assert len(c.records) == 6
    assert c.records[0].path == "x-1/y-a"


def test_explicit_records_and_exclude(tmp_path):
    text = cmd_campaign(
        variables={"x": [1, 2], "y": ["a", "b"]},
        records=[{"x": 9, "y": "z"}],
        exclude=[{"x": 2, "y": "a"}, {"y": "b"}],
    )
    c = load_campaign(write(tmp_path, text))
    assert [r.values for r in c.records] == [{"x": 1, "y": "a"}, {"x": 9, "y": "z"}]


def test_records_only(tmp_path):
    text = cmd_campaign(variables={}, records=[{"x": 1}, {"x": 3}])
    c = load_campaign(write(tmp_path, text))
    assert [r.values["x"] for r in c.records] == [1, 3]


def test_defaults_are_filled(tmp_path):
    c = load_campaign(write(tmp_path, cmd_campaign()))
    assert c.nb_runs == 1 and c.timeout_s is None and c.plots == [] and c.pretty == {}


def test_heater_cpu_all_expands_to_online_cpus(tmp_path):
    c = load_campaign(write(tmp_path, "name: h\nbenchmark: heater\nvariables:\n  cpu: all\n"))
    assert [r.values["cpu"] for r in c.records] == list(online_cpus())


def test_build_variables_split(tmp_path):
    text = yaml.safe_dump(
        {
            "name": "t",
            "benchmark": {
                "type": "command",
                "build": "echo {opt} > {build_dir}/o",
                "build_variables": ["opt"],
                "command": "cat {build_dir}/o {x}",
            },
            "variables": {"opt": ["O1", "O2"], "x": [1, 2, 3]},
        }
    )
    c = load_campaign(write(tmp_path, text))
    assert c.build_vars == ["opt"]
    assert sorted(c.build_keys()) == ["opt-O1", "opt-O2"]


BAD = [
    ("name: t\nbenchmark: heater\nbogus: 1\n", "bogus", "unknown key"),
    ("name: t\nbenchmark: heater\nnb_runs: three\n", "nb_runs", "expected integer"),
    ("name: t\nbenchmark: heater\nvariables:\n  cpu: []\n", "variables.cpu", "empty list"),
    ("name: t\nbenchmark: heater\nvariables:\n  cpu: [0, 0]\n", "variables.cpu", "duplicate value"),
    ("name: t\nbenchmark: nosuch\n", "benchmark", "unknown benchmark 'nosuch'"),
    ("name: t\nbenchmark: {type: nosuch}\n", "benchmark.type", "unknown benchmark"),
    (
        "name: t\nbenchmark: {type: command, command: 'echo', metrics: {m: 'no group'}}\n",
        "benchmark.metrics.m",
        "exactly one group",
    ),
    (
        "name: t\nbenchmark: {type: command, command: 'echo', metrics: {m: '(a)(b)'}}\n",
        "benchmark.metrics.m",
        "exactly one group",
    ),
    (
        "name: t\nbenchmark: {type: command, command: 'echo {nope}'}\n",
        "benchmark.command",
        "unknown placeholder {nope}",
    ),
    ("name: t\nbenchmark: {type: command, command: 'echo', typo: 1}\n", "benchmark.typo", "unknown key"),
    ("name: t\nbenchmark: heater\nvariables:\n  cpu: [99999]\n", "variables.cpu", "not an online CPU"),
    ("name: t\nbenchmark: heater\nvariables:\n  cpu: nonsense\n", "variables.cpu", "neither a list"),
    ("name: 'a/b'\nbenchmark: heater\n", "name", "does not match"),
    ("name: t\nbenchmark: heater\nvariables:\n  run: [1]\n", "variables.run", "reserved"),
    ("name: t\nbenchmark: heater\nvariables:\n  cpu: [0]\nexclude: [{cpu: 0}]\n", "exclude", "removes every record"),
    (
        "name: t\nbenchmark: heater\nvariables:\n  cpu: [0]\nplots: [{kind: pie, x: cpu, y: ops_per_s}]\n",
        "plots[0].kind",
        "is not one of",
    ),
    (
        "name: t\nbenchmark: heater\nvariables:\n  cpu: [0]\nplots: [{kind: bar, x: cpu, y: nope}]\n",
        "plots[0].y",
        "not a metric",
    ),
    (
        "name: t\nbenchmark: heater\nvariables:\n  cpu: [0]\npretty: {cpu: {'7': seven}}\n",
        "pretty.cpu.7",
        "not a value",
    ),
    ("name: t\nname: u\nbenchmark: heater\n", "line 2", "duplicate key"),
    ("name: t\nbenchmark: [heater\n", "line", "invalid YAML"),
    ("", "(top level)", "empty"),
    ("- a\n- b\n", "(top level)", "expected a mapping"),
    ("benchmark: heater\n", "(top level)", "'name' is a required property"),
    (
        "name: t\nbenchmark: leveldb\nvariables:\n  bench_name: [readfast]\n",
        "variables.bench_name",
        "unknown db_bench benchmark",
    ),
    (
        "name: t\nbenchmark: {type: command, command: 'echo {x}', build_variables: [x]}\nvariables: {x: [1]}\n",
        "benchmark.build_variables",
        "without a benchmark.build",
    ),
    (
        "name: t\nbenchmark: {type: command, command: 'echo {x}'}\nvariables: {x: [1, 2]}\nrecords: [{y: 1}]\n",
        "records[0]",
        "missing x",
    ),
]


@pytest.mark.parametrize("text,key,problem", BAD)
def test_bad_campaigns_give_one_line_naming_file_key_problem(tmp_path, text, key, problem):
    path = write(tmp_path, text)
    with pytest.raises(CampaignError) as info:
        load_campaign(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}: ")
    assert info.value.key.startswith(key), message
    assert problem in info.value.problem, message


def test_duplicate_campaign_names(tmp_path):
    a = write(tmp_path, "name: same\nbenchmark: heater\n", "a.yaml")
    b = write(tmp_path, "name: same\nbenchmark: heater\n", "b.yaml")
    with pytest.raises(CampaignError, match="also used by"):
        load_campaigns([str(a), str(b)])


def test_value_types_that_print_alike_are_duplicates(tmp_path):
    with pytest.raises(CampaignError, match="duplicate value"):
        load_campaign(write(tmp_path, cmd_campaign(variables={"x": [4, "4"]})))


def _podman_has(image: str) -> bool:
    import shutil

    return (
        bool(shutil.which("podman"))
        and subprocess.run(["podman", "image", "exists", image], check=False).returncode == 0
    )


def test_shipped_campaigns_are_valid():
    from perfsnake import ROOT
    from perfsnake.instruments import sched

    files = sorted(str(p) for p in (ROOT / "config" / "campaigns").glob("*.yaml"))
    assert files
    # A campaign whose sched_timeline records every CPU is refused, in one
    # line saying so, to a user who may not (that needs root, or
    # perf_event_paranoid -1 and a readable tracefs), and only to them.
    problem = capabilities.recording_problem(sched.EVENTS)
    timelines = [
        f for f in files if "sched_timeline" in json.dumps(yaml.safe_load(Path(f).read_text()).get("wrappers"))
    ]
    if problem:
        for f in timelines:
            with pytest.raises(CampaignError) as err:
                load_campaigns([f])
            said = rf"{re.escape(f)}: wrappers\[\d+\]: {re.escape(problem)}: the timeline records every CPU's scheduler tracepoints"
            assert re.fullmatch(said, str(err.value)), err.value
        files = [f for f in files if f not in timelines]
    # A container campaign needs the engine and its image, and is refused in
    # one line naming them only where this account's podman has no image.
    containers = [
        f for f in files if (yaml.safe_load(Path(f).read_text()).get("platform") or {}).get("type") == "container"
    ]
    if os.geteuid() == 0:
        assert build_image() is None  # root's suite has it (scripts/setup/container.sh)
    if not _podman_has(IMAGE):
        for f in containers:
            with pytest.raises(CampaignError) as err:
                load_campaigns([f])
            assert re.fullmatch(rf"{re.escape(f)}: platform\.(engine|image): .*", str(err.value)), err.value
        files = [f for f in files if f not in containers]
    # each file once, with the campaigns derived from it (controls, profiled runs)
    loaded = load_campaigns(files)
    assert len([c for c in loaded if not c.control_of and not c.why_of and not c.floor_of]) == len(files)


def test_the_package_keeps_the_names_its_importers_use():
    # Importers (planning, figures, cli, the stages, the tests) take these from
    # perfsnake.campaign itself, whichever of its modules defines them.
    import perfsnake.campaign

    used = ["Campaign", "Record", "check_plots", "load_campaign", "load_campaigns", "schema_error"]
    assert set(used) <= set(perfsnake.campaign.__all__)
    assert all(callable(getattr(perfsnake.campaign, name)) for name in used)


def test_every_check_sees_the_same_metrics_benchmark_instruments_derived(tmp_path):
    # One list, in the CSV's column order; a hook's metric and a derived one
    # are metrics to the plots, the precision loop and the reference gates alike.
    hook = {"type": "command", "name": "probe", "command": "echo seen=1", "metrics": {"seen": r"seen=(\S+)"}}
    text = cmd_campaign(
        pre_run_hooks=[hook],
        derived={"v2": "v * 2"},
        plots=[{"kind": "line", "x": "x", "y": ["v2", "hook.probe.seen"]}],
        precision={"metric": "hook.probe.seen", "target_rel_ci": 0.05},
        references=[{"metric": "v2", "upper": 10}],
    )
    c = load_campaign(write(tmp_path, text))
    assert c.metric_names() == ["v", "hook.probe.seen", "v2"]
    assert c.precision["metric"] == "hook.probe.seen" and c.references[0]["metric"] == "v2"
    decided = cmd_campaign(derived={"v2": "v * 2"}, statistics={"decide": {"metric": "v2", "min_effect": "5%"}})
    assert load_campaign(write(tmp_path, decided)).precision["metric"] == "v2"
