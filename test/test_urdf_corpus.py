"""Malformed and hostile URDFs (test/urdf_corpus/, outcomes in manifest.json):
each gives its documented outcome within 1 s, and nothing outside the file is
read. Outcomes: "error" (an URDFError whose text matches "match"), "warning"
(loads, and some warning matches "match") or "ok" (loads without any warning:
the odd content is in elements dynamics does not read, such as visual,
collision, material, transmission, gazebo or an extension tag). "nq", where
given, is the number of degrees of freedom of the loaded model."""
import json
import re
import time
import warnings
from pathlib import Path

import pytest

import robot_dynamics as rd

CORPUS = Path(__file__).parent / "urdf_corpus"
MANIFEST = json.loads((CORPUS / "manifest.json").read_text())


def test_corpus_is_large_enough():
    assert len(MANIFEST) >= 30
    assert sorted(MANIFEST) == sorted(p.name for p in CORPUS.glob("*.urdf"))


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_each_description_gives_its_documented_outcome_within_a_second(name):
    expected = MANIFEST[name]
    path = CORPUS / name
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if expected["outcome"] == "error":
            with pytest.raises(rd.URDFError, match=expected["match"]) as err:
                rd.load_urdf(path)
            assert "root:" not in str(err.value)                 # /etc/passwd never read
        else:
            model = rd.load_urdf(path)
            messages = [str(w.message) for w in caught]
            if expected["outcome"] == "warning":
                assert any(re.search(expected["match"], m) for m in messages), messages
            else:
                assert expected["outcome"] == "ok" and messages == []
            assert "root:" not in model.name
            assert model.nq == expected.get("nq", model.nq)
    assert time.perf_counter() - start < 1.0


def test_fifty_megabyte_description_is_refused_quickly(tmp_path):
    path = tmp_path / "huge.urdf"
    links = "".join('<link name="l%d"/>' % i for i in range(1000))
    with open(path, "w") as fh:
        fh.write('<robot name="huge">' + links)
        fh.write("<!--" + "x" * (50 * 1024 * 1024) + "-->")
        fh.write("</robot>")
    start = time.perf_counter()
    with pytest.raises(rd.URDFError, match="larger than max_bytes"):
        rd.load_urdf(path)
    assert time.perf_counter() - start < 1.0
    with pytest.raises(rd.URDFError, match="larger than max_bytes"):
        rd.load_urdf(path.read_text())


def test_external_entity_pointing_at_a_real_file_is_not_resolved(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("leaked-secret")
    xml = ('<?xml version="1.0"?><!DOCTYPE robot [<!ENTITY x SYSTEM "file://%s">]>'
           '<robot name="&x;"><link name="a"/></robot>' % secret)
    with pytest.raises(rd.URDFError) as err:
        rd.load_urdf(xml)
    assert "leaked-secret" not in str(err.value)
