"""report.html in a real headless browser (Debian's Chromium through Selenium and chromedriver):
rendered from a committed run, it loads from disk with no console error and no network request,
the rows table sorts by a column and filters by a backend, the rows shown are the run's, the
scorecard has a line per backend; a screenshot is taken. Skipped, saying why, where the browser
or Selenium is missing (scripts/test.sh installs them where it can)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "results/nvidia-h100/2026-11-25-spec-decode/run3/spec"  # 5 backends, 480 rows
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")


def test_the_page_is_self_contained_and_holds_every_row(tmp_path):
    from harness import html, report, results

    prov, rows = report.load(RUN)
    results.annotate(rows)
    page = html.render(prov, rows)
    assert "http://" not in page and "https://" not in page and "src=\"//" not in page
    assert page.count("<tr>") >= len(rows) + 1 and "Scorecard" in page
    prov = {**prov, "complete": False}
    assert "the run was stopped" in html.render(prov, rows[:10])


@pytest.fixture(scope="module")
def browser():
    webdriver = pytest.importorskip("selenium.webdriver", reason="Selenium is not installed "
                                    "(pip install selenium; scripts/test.sh installs it)")
    if not (CHROMIUM and CHROMEDRIVER):
        pytest.skip("no Chromium with chromedriver here (Debian: apt-get install chromium "
                    "chromium-driver; scripts/test.sh installs them where it runs as root)")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--window-size=1600,1200"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def test_the_report_works_in_a_browser(browser, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    res = subprocess.run([sys.executable, "-m", "harness", "report", str(RUN), "--out", str(tmp_path),
                          "--html", "--no-plots"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    rows = [r for r in json.loads((tmp_path / "results.json").read_text())["rows"] if not r.get("no_kernel")]
    browser.get((tmp_path / "report.html").as_uri())
    assert browser.title.startswith("decode-bench")
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert not errors, errors
    requests = [json.loads(e["message"])["message"] for e in browser.get_log("performance")]
    urls = {m["params"]["request"]["url"] for m in requests if m["method"] == "Network.requestWillBeSent"}
    assert all(u.startswith(("file://", "data:")) for u in urls), urls

    table = browser.find_element(By.ID, "rows")
    assert len(table.find_elements(By.CSS_SELECTOR, "tbody tr")) == len(rows)
    backends = sorted({r["backend"] for r in rows})
    card = browser.find_element(By.ID, "scorecard").find_elements(By.CSS_SELECTOR, "tbody tr")
    assert sorted(tr.find_element(By.TAG_NAME, "td").text for tr in card) == backends

    heads = [th.text.replace("\u2195", "").strip() for th in table.find_elements(By.TAG_NAME, "th")]
    us = heads.index("us")
    table.find_elements(By.TAG_NAME, "th")[us].click()

    def column(i):
        return [tr.find_elements(By.TAG_NAME, "td")[i].get_attribute("textContent")
                for tr in table.find_elements(By.CSS_SELECTOR, "tbody tr") if tr.is_displayed()]

    times = [float(t) for t in column(us) if t]
    assert times == sorted(times) and len(times) == sum(r.get("median_us") is not None for r in rows)

    Select(browser.find_element(By.NAME, "backend")).select_by_value("triton")
    shown = column(heads.index("backend"))
    assert set(shown) == {"triton"} and len(shown) == sum(r["backend"] == "triton" for r in rows)
    assert browser.find_element(By.ID, "shown").text == str(len(shown))
    assert browser.save_screenshot(str(tmp_path / "report.png"))


def test_the_index_page_links_every_run_and_gives_each_current_run_a_page(tmp_path):
    for name in ("run4/w", "run5/window"):  # two complete runs of one kind: one current
        shutil.copytree(RUN.parent.parent / name, tmp_path / name)
    res = subprocess.run([sys.executable, "-m", "harness", "report", str(tmp_path), "--html"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    page = (tmp_path / "index.html").read_text()
    assert 'href="run5/window/report.html"' in page and 'href="run4/w/results.md"' in page
    assert (tmp_path / "run5/window/report.html").exists() and not (tmp_path / "run4/w/report.html").exists()
    assert "its current runs" in page and "http" not in page


def test_compare_writes_what_moved_and_the_flips_as_a_page(tmp_path):
    old, new = RUN.parent.parent / "run4/w", RUN.parent.parent / "run5/window"
    res = subprocess.run([sys.executable, "-m", "harness", "compare", str(old), str(new), "--html",
                          str(tmp_path / "cmp.html")], cwd=ROOT, capture_output=True, text=True, timeout=300)
    page = (tmp_path / "cmp.html").read_text()
    assert res.returncode in (0, 1) and "Moved beyond their intervals" in page and "Ranking" in page
    for line in res.stdout.splitlines():
        if line.startswith("  flipped: "):
            assert line.removeprefix("  flipped: ").replace("&", "&amp;") in page


def test_the_rows_filter_by_workload_in_a_browser(browser, tmp_path):
    """A run over two workloads (grid + ragged, from before rows named theirs: re-drawn from its
    command) filters to the rows of one."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    run = ROOT / "results/nvidia-h100/2026-11-25-two-gpus/plain"
    res = subprocess.run([sys.executable, "-m", "harness", "report", str(run), "--out", str(tmp_path),
                          "--html", "--no-plots"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    rows = [r for r in json.loads((tmp_path / "results.json").read_text())["rows"] if not r.get("no_kernel")]
    assert {r.get("workload") for r in rows} == {"grid", "ragged"}
    browser.get((tmp_path / "report.html").as_uri())
    table = browser.find_element(By.ID, "rows")
    heads = [th.text.replace("\u2195", "").strip() for th in table.find_elements(By.TAG_NAME, "th")]
    Select(browser.find_element(By.NAME, "workload")).select_by_value("ragged")
    shown = [tr for tr in table.find_elements(By.CSS_SELECTOR, "tbody tr") if tr.is_displayed()]
    assert len(shown) == sum(r["workload"] == "ragged" for r in rows) > 0
    assert all("ragged" in tr.find_elements(By.TAG_NAME, "td")[heads.index("problem")].text for tr in shown)
