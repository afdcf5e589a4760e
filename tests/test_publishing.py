"""What is published is what is tested: the Pages workflow runs CI's Makefile targets."""

import pathlib
import re

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / ".github" / "workflows" / "publish.yml"


def steps(job):
    return yaml.safe_load(WORKFLOW.read_text())["jobs"][job]["steps"]


def test_workflow_builds_with_the_targets_ci_runs():
    ci = [ln for ln in (ROOT / ".ci" / "run").read_text().splitlines()
          if ln.startswith("make ")]
    runs = [s["run"] for s in steps("build") if "run" in s]
    assert runs == ["make test", "make book"], runs
    assert set(ci) <= set(runs), f".ci/run runs {ci}, the workflow {runs}"


def test_workflow_deploys_the_built_html_from_main_only():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    upload = [s for s in steps("build") if s.get("uses", "").startswith(
        "actions/upload-pages-artifact")]
    assert upload and upload[0]["with"]["path"] == "_build/html"
    deploy = workflow["jobs"]["deploy"]
    assert "refs/heads/main" in deploy["if"] and "pull_request" in deploy["if"]
    assert any(s.get("uses", "").startswith("actions/deploy-pages") for s in deploy["steps"])
    assert workflow[True]["push"]["branches"] == ["main"]  # YAML reads `on:` as True


def test_make_publish_pushes_the_built_html_with_ghp_import():
    makefile = (ROOT / "Makefile").read_text()
    rule = re.search(r"^publish: book.*\n((?:\t.*\n)+)", makefile, re.M)
    assert rule and "ghp-import" in rule[1] and "_build/html" in rule[1]
