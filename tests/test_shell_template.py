import subprocess

import pytest

from perfsnake.shell_template import placeholders, render


@pytest.mark.parametrize(
    "value", ["$(touch canary)", "`touch canary`", "a; touch canary", "'\"; touch canary; echo \"'", "x\ntouch canary"]
)
def test_rendered_values_cannot_inject(tmp_path, value):
    cmd = render("printf %s {x}", {"x": value})
    out = subprocess.run(["sh", "-c", cmd], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert out.stdout == value
    assert not (tmp_path / "canary").exists()


def test_placeholders_and_escaped_braces():
    assert placeholders("awk '{{print $1}}' {file} {n}") == {"file", "n"}
    assert render("awk '{{print}}' {f}", {"f": "a b"}) == "awk '{print}' 'a b'"


def test_malformed_placeholders_are_rejected():
    with pytest.raises(ValueError):
        placeholders("{x:>3}")
    with pytest.raises(ValueError):
        placeholders("{x!r}")
    with pytest.raises(ValueError):
        placeholders("{unclosed")
