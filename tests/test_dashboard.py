"""The history dashboard as a user meets it (docs/history.md): the real
workflow records three invocations of a small campaign into the results
store, `make report` writes the report, `perfsnake history publish site/`
builds the site, and headless Chromium opens it from disk. Every promise of
the docs is checked on the page itself: the legend names the machine that
recorded the runs (and the drop-down the campaign's records), the wheel and a
drag zoom and pan the time axis (read from the Vega view's scale, not from
pixels), hovering a point shows its commit, date and value, and clicking it
opens that invocation's report page.

The metric is counted work (iterations the command reports), never time, so
every value the page shows is known exactly: WORK[i] * size at invocation i.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from helpers import snakemake, write_campaign

from perfsnake.history.store import Store

pytestmark = pytest.mark.e2e

CAMPAIGN = "dashwalk"
SIZES = (1, 2, 3)
RUNS = 2
# Iterations per unit of size at each invocation: a 25 % step planted at the
# third, so a step rule is drawn where the last point is (hovering and
# clicking the point must still reach the point).
WORK = (100, 100, 125)
# A browser that is not in UTC: the axis says UTC, so the dates must be UTC.
BROWSER_TZ = "Asia/Kolkata"
PERFSNAKE = str(Path(sys.executable).with_name("perfsnake"))

# Keeps each chart's Vega view for the test: the page hands vegaEmbed's
# result to nobody, so the page's own call is wrapped before any script runs.
KEEP_VIEWS = """
(() => {
  let embed;
  window.__views = {};
  Object.defineProperty(window, "vegaEmbed", {
    configurable: true,
    set(f) { embed = f; },
    get() {
      return (el, spec, opts) => embed(el, spec, opts).then(r => { window.__views[el] = r.view; return r; });
    },
  });
})();
"""


@dataclass
class Recorded:
    workdir: Path
    site: Path
    hostname: str
    invocations: list[str]  # the ids the workflow printed, in order
    starts: list[datetime]  # each invocation's first start, as stored


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Recorded:
    """Three invocations of the real workflow into one store, then the report
    and the site, as docs/history.md and the Makefile say."""
    workdir = tmp_path_factory.mktemp("dashboard")
    env = {"PERFSNAKE_HISTORY": f"sqlite:///{workdir / 'store' / 'history.sqlite'}"}
    work = workdir / "work"
    campaign = write_campaign(
        workdir,
        {
            "name": CAMPAIGN,
            "benchmark": {
                "type": "command",
                "command": f"echo iterations=$(( $(cat {work}) * {{size}} ))",
                "metrics": {"iters": r"iterations=(\d+)"},
            },
            "variables": {"size": list(SIZES)},
            "nb_runs": RUNS,
        },
    )
    invocations = []
    for i, amount in enumerate(WORK):
        work.write_text(f"{amount}\n")
        proc = snakemake(workdir, campaign, *([] if i == 0 else ["--forcerun", "run"]), env=env)
        said = re.search(
            rf"history: {CAMPAIGN}: {len(SIZES) * RUNS} run\(s\) recorded as invocation (\w+)", proc.stderr
        )
        assert said, proc.stderr[-3000:]
        invocations.append(said.group(1))
    # `make report`: the same targets, and the report of the last invocation.
    snakemake(workdir, campaign, "all", "--report", "report.html", env=env)
    assert (workdir / "report.html").stat().st_size > 0

    site = workdir / "site"
    published = subprocess.run([PERFSNAKE, "history", "publish", str(site)], cwd=workdir, capture_output=True,
                               text=True, env={**os.environ, **env}, check=False)  # fmt: skip
    assert published.returncode == 0, published.stderr
    assert sorted(p.name for p in site.glob("*.html")) == [f"campaign-{CAMPAIGN}.html", "index.html"]

    frame = Store.open(env["PERFSNAKE_HISTORY"]).frame(CAMPAIGN)
    hostnames = set(frame["hostname"])
    assert len(hostnames) == 1
    by_id = frame.drop_duplicates("invocation_id").set_index("invocation_id")
    stored = sorted(by_id.index, key=lambda inv: by_id.loc[inv, "first_start"])
    assert [inv[:12] for inv in stored] == invocations  # the workflow's own three, in order
    starts = [datetime.fromisoformat(str(by_id.loc[inv, "first_start"]).replace("Z", "+00:00")) for inv in stored]
    return Recorded(workdir, site, hostnames.pop(), invocations, starts)


@pytest.fixture(scope="module")
def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    if not chromium or not driver_path:
        pytest.skip("chromium and chromium-driver are not installed (scripts/setup/apt.sh installs them)")
    profile = tempfile.mkdtemp(prefix="perfsnake-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                "--disable-background-networking", "--disable-component-update", "--disable-sync",
                f"--user-data-dir={profile}", "--window-size=1200,1300"):  # fmt: skip
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(driver_path, env={**os.environ, "TZ": BROWSER_TZ})
    driver = webdriver.Chrome(service=service, options=options)
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": KEEP_VIEWS})
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def _wait(driver, condition, what: str, seconds: float = 30):
    """Poll `condition` until it is truthy; its value. A timeout says what never happened."""
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        return WebDriverWait(driver, seconds, poll_frequency=0.1).until(condition)
    except TimeoutException:
        raise AssertionError(f"after {seconds} s: {what}") from None


def _open(driver, recorded: Recorded) -> None:
    from selenium.webdriver.common.by import By

    driver.get((recorded.site / f"campaign-{CAMPAIGN}.html").as_uri())
    charts = driver.find_elements(By.CSS_SELECTOR, "div.chart")
    assert [c.get_attribute("data-metric") for c in charts] == ["iters", "wall_s"]
    _wait(driver, lambda d: d.execute_script(
        "return [...document.querySelectorAll('div.chart')].every(c => c.dataset.rendered === 'yes')"
        " && Object.keys(window.__views).length === 2"
    ), "the charts rendered")  # fmt: skip


def _errors(driver) -> list[dict]:
    return [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def _domain(driver) -> list[float]:
    """The iters chart's visible time range (ms), from its view's x scale."""
    return driver.execute_script("return window.__views['#chart-0'].scale('x').domain().map(Number)")


def _points(driver) -> list:
    """The iters chart's points (the symbol mark whose data has the means), earliest first."""
    from selenium.webdriver.common.by import By

    name, order = driver.execute_script("""
        const marks = window.__views['#chart-0'].scenegraph().root.items[0].items;
        const m = marks.find(m => m.marktype === 'symbol' && m.items.length && 'mean' in m.items[0].datum);
        const xs = m.items.map(i => i.x);
        return [m.name, xs.map((x, i) => i).sort((a, b) => xs[a] - xs[b])];
    """)  # fmt: skip
    paths = driver.find_elements(By.CSS_SELECTOR, f"#chart-0 g.{name} > path")
    assert len(paths) == len(order)
    return [paths[i] for i in order]


def _tooltip(driver) -> dict[str, str] | None:
    """The visible tooltip's rows (key -> value), or None."""
    return driver.execute_script("""
        const t = document.getElementById('vg-tooltip-element');
        if (!t || !t.classList.contains('visible')) return null;
        return Object.fromEntries([...t.querySelectorAll('tr')].map(
            r => [r.querySelector('.key').textContent, r.querySelector('.value').textContent]));
    """)  # fmt: skip


def test_the_legend_lists_the_machine_and_the_drop_down_the_records(browser, recorded):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    _open(browser, recorded)
    labels = browser.execute_script(
        "return [...document.querySelectorAll('#chart-0 .role-legend-label text')].map(t => t.textContent)"
    )
    assert labels == [recorded.hostname]  # the one machine that recorded the runs
    chart = browser.find_element(By.CSS_SELECTOR, "#chart-0")
    record = Select(chart.find_element(By.CSS_SELECTOR, ".vega-bindings select"))
    assert [o.text for o in record.options] == [f"size={s}" for s in SIZES]

    def means() -> list[float]:
        return browser.execute_script("""
            const marks = window.__views['#chart-0'].scenegraph().root.items[0].items;
            const m = marks.find(m => m.marktype === 'symbol' && m.items.length && 'mean' in m.items[0].datum);
            return m.items.map(i => [i.x, i.datum.mean]).sort((a, b) => a[0] - b[0]).map(p => p[1]);
        """)  # fmt: skip

    assert means() == [w * SIZES[0] for w in WORK]
    record.select_by_visible_text(f"size={SIZES[-1]}")
    _wait(browser, lambda d: means() == [w * SIZES[-1] for w in WORK], "choosing a record redraws its values")

    # Clicking the machine in the legend selects it (the machine selection's store).
    symbol = browser.find_element(By.CSS_SELECTOR, "#chart-0 .role-legend-symbol path")
    ActionChains(browser).move_to_element(symbol).click().perform()
    chosen = "return window.__views['#chart-0'].data('machine_store').map(t => t.values)"
    _wait(
        browser, lambda d: d.execute_script(chosen) == [[recorded.hostname]], "the legend's click selected the machine"
    )
    assert _errors(browser) == []


def test_the_wheel_zooms_and_a_drag_pans_the_time_axis(browser, recorded):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.actions.wheel_input import ScrollOrigin
    from selenium.webdriver.common.by import By

    _open(browser, recorded)
    first, last = (s.timestamp() * 1000 for s in (recorded.starts[0], recorded.starts[-1]))
    # The axis says UTC: its scale is UTC, whatever the browser's zone (BROWSER_TZ).
    assert browser.execute_script("return window.__views['#chart-0'].scale('x').type") == "utc"
    lo, hi = before = _domain(browser)
    assert lo < first and last < hi  # every invocation in view (the scale's padding beyond them)
    # The middle of the chart: inside the plot, clear of the points and the line (this campaign's values).
    plot = browser.find_element(By.CSS_SELECTOR, "#chart-0 svg")
    ActionChains(browser).scroll_from_origin(ScrollOrigin.from_element(plot), 0, -300).perform()
    zoomed = _wait(browser, lambda d: (now := _domain(d)) != before and now, "the wheel changed the x domain")
    assert before[0] < zoomed[0] < zoomed[1] < before[1]  # zoomed in: a narrower range inside the first
    # The zoom is the chart's interval parameter bound to the scales, not a redraw of its own.
    assert browser.execute_script("return window.__views['#chart-0'].signal('time_when')") == pytest.approx(zoomed)

    ActionChains(browser).move_to_element(plot).click_and_hold().move_by_offset(-150, 0).release().perform()
    panned = _wait(browser, lambda d: (now := _domain(d)) != zoomed and now, "the drag changed the x domain")
    # Dragging the plot left shows later times; the range's width stays.
    assert panned[0] > zoomed[0] and panned[1] > zoomed[1]
    assert panned[1] - panned[0] == pytest.approx(zoomed[1] - zoomed[0], abs=2)
    assert _errors(browser) == []


def test_hovering_a_point_shows_its_commit_date_and_values(browser, recorded, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains

    _open(browser, recorded)
    points = _points(browser)
    assert len(points) == len(WORK)  # one per invocation (the first record's)
    steps, xs = browser.execute_script("""
        const marks = window.__views['#chart-0'].scenegraph().root.items[0].items;
        const m = marks.find(m => m.marktype === 'symbol' && m.items.length && 'mean' in m.items[0].datum);
        return [marks.filter(m => m.name === 'steps_marks').flatMap(m => m.items.map(i => i.x)),
                m.items.map(i => i.x).sort((a, b) => a - b)];
    """)  # fmt: skip
    assert steps == [pytest.approx(xs[-1])]  # the planted step's rule, through the last point (hovered too)
    shown = None
    for i, point in enumerate(points):
        ActionChains(browser).move_to_element(point).perform()
        shown = _wait(browser, lambda d, previous=shown: (t := _tooltip(d)) and t != previous and t,
                      f"a tooltip over the point of invocation {i + 1}")  # fmt: skip
        values = {k: shown.pop(k, None) for k in ("iters", "low", "high")}
        assert shown == {
            "commit": "-",  # the campaign has no version variable
            "date": recorded.starts[i].astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S"),  # UTC, as the axis says
            "runs": str(RUNS),
            "machine": recorded.hostname,
            "invocation": recorded.invocations[i],
        }, f"point {i + 1}"
        # Counted iterations: every run the same, so mean = low = high, exactly.
        assert {k: float(v or "nan") for k, v in values.items()} == dict.fromkeys(values, WORK[i] * SIZES[0])
    shot = tmp_path / "dashboard.png"
    assert browser.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert _errors(browser) == []


def test_clicking_a_point_opens_that_invocations_report(browser, recorded):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    _open(browser, recorded)
    page = browser.current_url
    report = recorded.workdir / "results" / CAMPAIGN / "report" / "landing.html"
    assert report.is_file()  # the report's page of the campaign, written by the workflow
    ActionChains(browser).move_to_element(_points(browser)[-1]).click().perform()  # the latest, at the step
    _wait(browser, lambda d: d.current_url != page, "clicking the point navigated")
    assert browser.current_url == report.as_uri()
    _wait(browser, lambda d: d.execute_script("return document.readyState") == "complete", "the report page loaded")
    assert browser.find_element(By.TAG_NAME, "h2").text == CAMPAIGN
    runs = len(SIZES) * RUNS
    assert f"{runs} ({runs} / 0 / 0)" in browser.find_element(By.TAG_NAME, "body").text  # its runs: all ok
    assert _errors(browser) == []
