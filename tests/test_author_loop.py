"""The campaign author's loop, end to end: failures are loud, strict mode
fails CI, a regex edit re-parses without re-measuring, hostile values survive
the CSV."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import jobs_run, processes_under, snakemake, statuses, write_campaign

from perfsnake.campaign_csv import read_results

pytestmark = pytest.mark.e2e


def _campaign(metrics: dict[str, str], values=(1, 2, 3, 4)) -> dict:
    return {
        "name": "loop",
        "benchmark": {
            "type": "command",
            "command": "if [ {x} -ge 3 ]; then echo 'warning: slow disk' >&2; echo 'boom: bad input {x}' >&2; exit 3; fi; echo value={x} other=7",
            "metrics": metrics,
        },
        "variables": {"x": list(values)},
        "nb_runs": 1,
    }


def test_failures_and_unparsed_runs_are_loud_and_strict_mode_fails(tmp_path):
    camp = write_campaign(tmp_path, _campaign({"value": r"value=(\d+)", "typo": r"othr=(\d+)"}))
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")  # exit 0 without strict mode
    err = proc.stdout + proc.stderr
    assert (
        "run x-3/run-1 FAILED: exit code 3: boom: bad input 3" in err
    )  # the last stderr line, not a warning before it
    assert "run x-4/run-1 FAILED: exit code 3: boom: bad input 4" in err
    assert "run x-1/run-1 UNPARSED: no match for typo" in err and "run x-2/run-1 UNPARSED" in err
    assert "loop: 0 ok, 2 failed, 2 unparsed" in err
    assert "results/loop/loop.csv" in err
    # Strict mode (CI): the same campaign run afresh makes the invocation fail.
    fresh = tmp_path / "ci"
    fresh.mkdir()
    camp = write_campaign(fresh, _campaign({"value": r"value=(\d+)", "typo": r"othr=(\d+)"}))
    proc = snakemake(fresh, None, "--cores", "1", "all", "--config", "strict=true", f"campaign={camp}", check=False)
    assert proc.returncode == 1 and "strict mode: exit status 1" in proc.stdout + proc.stderr


def test_editing_a_regex_reparses_without_measuring(tmp_path):
    camp = write_campaign(tmp_path, _campaign({"value": r"value=(\d+)", "other": r"othr=(\d+)"}, values=(1, 2)))
    snakemake(tmp_path, camp, "--cores", "1", "all")
    before = {k: v["start"] for k, v in statuses(tmp_path, "loop").items()}
    assert read_results(tmp_path / "results/loop/loop.csv")["other"].isna().all()
    write_campaign(tmp_path, _campaign({"value": r"value=(\d+)", "other": r"other=(\d+)"}, values=(1, 2)))
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    assert jobs_run(proc, "run") == 0 and jobs_run(proc, "collect") == 1
    assert {k: v["start"] for k, v in statuses(tmp_path, "loop").items()} == before
    assert list(read_results(tmp_path / "results/loop/loop.csv")["other"]) == [7, 7]


def test_a_hash_in_a_value_survives_the_csv(tmp_path):
    camp = write_campaign(tmp_path, {
        "name": "lang", "benchmark": {"type": "command", "command": "echo value=1", "metrics": {"value": r"value=(\d+)"}},
        "variables": {"lang": ["C#", "F# ,x", "plain"]}, "nb_runs": 1,
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    frame = read_results(tmp_path / "results/lang/lang.csv")
    assert sorted(frame["lang"]) == ["C#", "F# ,x", "plain"] and list(frame["value"]) == [1, 1, 1]


def test_derived_metrics_and_metrics_from_files(tmp_path):
    command = (
        'printf \'{{"jobs": [{{"read": {{"iops": %d}}}}]}}\' $(( {x} * 100 )) > out.json; '
        "printf 'step,ms\\n1,5\\n2,%d\\n' {x} > t.csv; echo events=$(( {x} * 10 )) secs=2"
    )
    camp = write_campaign(tmp_path, {
        "name": "files",
        "benchmark": {"type": "command", "command": command,
                      "metrics": {"events": r"events=(\d+)", "secs": r"secs=(\d+)"},
                      "metrics_from": [{"file": "out.json", "format": "json", "fields": {"iops": "jobs.0.read.iops"}},
                                       {"file": "t.csv", "format": "csv", "fields": {"last_ms": "-1.ms"}}]},
        "variables": {"x": [1, 3]}, "nb_runs": 1,
        "derived": {"events_per_s": "events / secs", "per_iop": "events_per_s / iops * x"},
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    frame = read_results(tmp_path / "results/files/files.csv").set_index("x")
    assert list(frame.loc[3, ["iops", "last_ms", "events_per_s"]]) == [300, 3, 15]
    assert frame.loc[3, "per_iop"] == pytest.approx(15 / 300 * 3)


def test_a_misspelt_name_in_a_derived_metric_is_refused_before_anything_runs(tmp_path):
    camp = write_campaign(tmp_path, {
        "name": "bad", "benchmark": {"type": "command", "command": "echo events=1", "metrics": {"events": r"events=(\d+)"}},
        "variables": {"x": [1]}, "derived": {"rate": "evnts / wall_s"},
    })  # fmt: skip
    proc = snakemake(tmp_path, camp, "--cores", "1", "all", check=False)
    assert proc.returncode != 0 and not (tmp_path / "results").exists()
    line = [ln for ln in proc.stderr.splitlines() if ln.startswith("perfsnake: error:")]
    assert line == [
        f"perfsnake: error: {camp}: derived.rate: unknown name 'evnts' (did you mean 'events'?) (metrics, variables and earlier derived metrics)"
    ]


def test_a_command_time_series_loses_its_warm_up(tmp_path):
    # Ten slow ticks, then thirty steady ones: the steady mean excludes the warm-up.
    ticks = " ".join(["10"] * 10 + ["100", "101", "99", "100", "102", "98"] * 5)
    camp = write_campaign(tmp_path, {
        "name": "series", "benchmark": {"type": "command", "command": f"for v in {ticks}; do echo tick $v; done; echo done=1",
                                        "metrics": {"done": r"done=(\d+)"}, "series": {"name": "tick", "regex": r"^tick (\S+)$"}},
        "variables": {"x": [1]}, "nb_runs": 1,
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    frame = read_results(tmp_path / "results/series/series.csv")
    assert frame["tick_steady"][0] == pytest.approx(100, abs=1)
    assert (tmp_path / "results/series/runs/x-1/run-1/samples.csv").exists()


def test_wps_without_readings_is_refused(tmp_path):
    camp = write_campaign(tmp_path, {
        "name": "w", "benchmark": {"type": "command", "command": "echo value=1", "metrics": {"value": r"value=(\d+)"}},
        "variables": {"x": [1]}, "statistics": {"warmup": "wps"},
    })  # fmt: skip
    proc = snakemake(tmp_path, camp, "--cores", "1", "all", check=False)
    assert proc.returncode != 0 and "statistics.warmup: wps needs unit readings" in proc.stderr


def test_machine_state_is_recorded_around_each_run(tmp_path):
    camp = write_campaign(tmp_path, {
        "name": "state", "benchmark": {"type": "command", "command": "echo value=1", "metrics": {"value": r"value=(\d+)"}},
        "variables": {"x": [1, 2]}, "nb_runs": 1,
    })  # fmt: skip
    snakemake(tmp_path, camp, "--cores", "1", "all")
    frame = read_results(tmp_path / "results/state/state.csv")
    for column in ("machine.load1", "machine.other_cpu_s", "machine.mem_available_mb"):
        assert frame[column].notna().all() and (frame[column] >= 0).all(), column


def _hooked(pre: list, command: str = "echo value=1", timeout_s: int = 60) -> dict:
    return {
        "name": "hooks", "benchmark": {"type": "command", "command": command, "metrics": {"value": r"value=(\d+)"}},
        "variables": {"x": [1]}, "nb_runs": 1, "timeout_s": timeout_s, "pre_run_hooks": pre,
    }  # fmt: skip


def test_a_failing_pre_run_hook_ends_the_run_at_once(tmp_path):
    camp = write_campaign(
        tmp_path,
        _hooked(
            [{"type": "command", "name": "prep", "command": "echo cannot prepare; exit 5"}],
            command="sleep 50; echo value=1",
        ),
    )
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    status = statuses(tmp_path, "hooks")["x-1/run-1"]
    assert status["status"] == "hook_failed" and "prep hook exited with 5" in status["reason"]
    assert "HOOK_FAILED: the prep hook exited with 5" in proc.stderr
    assert (tmp_path / "results/hooks/runs/x-1/run-1/hook-prep-pre.log").read_text().strip() == "cannot prepare"
    assert "hook_failed" in list(read_results(tmp_path / "results/hooks/hooks.csv")["status"])


def test_a_daemon_that_dies_or_never_gets_ready_fails_the_run(tmp_path):
    camp = write_campaign(
        tmp_path,
        _hooked(
            [
                {
                    "type": "daemon",
                    "name": "srv",
                    "command": "exit 7",
                    "ready": {"file": "{run_dir}/never", "timeout_s": 20},
                }
            ]
        ),
    )
    snakemake(tmp_path, camp, "--cores", "1", "all")
    status = statuses(tmp_path, "hooks")["x-1/run-1"]
    assert status["status"] == "hook_failed" and "exited with status" in status["reason"]
    other = tmp_path / "slow"
    other.mkdir()
    camp = write_campaign(
        other,
        _hooked(
            [
                {
                    "type": "daemon",
                    "name": "srv",
                    "command": "sleep 100",
                    "ready": {"file": "{run_dir}/never", "timeout_s": 1},
                }
            ]
        ),
    )
    snakemake(other, camp, "--cores", "1", "all")
    status = statuses(other, "hooks")["x-1/run-1"]
    assert status["status"] == "hook_failed" and status["reason"].startswith("not ready after 1 s")


def test_a_server_daemon_on_a_free_port_is_ready_before_the_benchmark(tmp_path):
    server = "exec python3 -m http.server {free_port} --bind 127.0.0.1"
    client = "python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=5)' http://127.0.0.1:{free_port}/ && echo value=1"
    camp = write_campaign(
        tmp_path,
        _hooked(
            [{"type": "daemon", "name": "web", "command": server, "ready": {"tcp": "{free_port}", "timeout_s": 30}}],
            command=client,
        ),
    )
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    status = statuses(tmp_path, "hooks")["x-1/run-1"]
    assert status["status"] == "ok", (tmp_path / "results/hooks/runs/x-1/run-1/stderr.txt").read_text()
    assert "aborted by signal" not in proc.stdout + proc.stderr  # a normal teardown says nothing alarming


def test_a_daemon_that_dies_during_the_run_ends_it_at_once(tmp_path):
    daemon = {
        "type": "daemon",
        "name": "srv",
        "command": "touch {run_dir}/up; sleep 1; exit 3",
        "ready": {"file": "{run_dir}/up", "timeout_s": 30},
    }
    camp = write_campaign(tmp_path, _hooked([daemon], command="sleep 60; echo value=1", timeout_s=120))
    proc = snakemake(tmp_path, camp, "--cores", "1", "all")
    status = statuses(tmp_path, "hooks")["x-1/run-1"]
    assert (
        status["status"] == "hook_failed" and status["reason"] == "the srv daemon exited with status 3 during the run"
    )
    assert "HOOK_FAILED: the srv daemon exited with status 3 during the run" in proc.stderr
    # Ended by the daemon's death, long before the benchmark's 60 s.
    assert processes_under(tmp_path, "sleep 60") == []


def test_the_end_summary_names_differences_of_the_plotted_metrics(tmp_path, monkeypatch):
    # An instrument's counter (lock acquisitions double with the threads) is
    # significant by construction: the summary shows what the campaign plots.
    from perfsnake import layout
    from perfsnake.stages.summary import _top_differences

    monkeypatch.chdir(tmp_path)
    path = Path(layout.comparisons("c"))
    path.parent.mkdir(parents=True)
    head = "metric,variable,a,b,fixed,relative_difference,p_adjusted,significant\n"
    path.write_text(
        head
        + "lock.acquisitions,nb_threads,1,2,,1.0,0.01,True\n"
        + "ops_per_s,nb_threads,1,2,,0.25,0.02,True\n"
        + "ops_per_s,lock,cas,mcs,,0.05,0.30,False\n"
    )
    assert [d.split(":")[0] for d in _top_differences("c", ["ops_per_s"])] == ["ops_per_s"]
    assert _top_differences("c", ["wall_s"]) == []
    assert len(_top_differences("c", [])) == 2
