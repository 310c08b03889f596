"""The committed JSON Schemas of the plan and the results file are the models' own, and the
results format page's example is a results file."""

from __future__ import annotations

import json
import re

from bot.contracts.results import ResultsFile
from bot.contracts.schema import SCHEMAS, schema_text
from tests.paths import ROOT


def test_committed_schemas_are_current() -> None:
    for name, model in SCHEMAS.items():
        committed = (ROOT / "docs" / "schema" / name).read_text(encoding="utf-8")
        assert committed == schema_text(model), (
            f"docs/schema/{name} is out of date: run `python -m bot.contracts.schema docs/schema`"
        )


def test_a_results_file_validates_against_the_fields_its_schema_names() -> None:
    schema = SCHEMAS["results.schema.json"].model_json_schema()
    assert set(schema["required"]) >= {"head_sha", "base_sha", "vendor", "evidence"}
    assert schema["additionalProperties"] is False


def test_the_example_on_the_results_format_page_is_a_results_file() -> None:
    page = (ROOT / "docs" / "results-format.md").read_text(encoding="utf-8")
    (example,) = re.findall(r"```json\n(.*?)```", page, flags=re.S)
    results = ResultsFile.model_validate(json.loads(example))
    (shape,) = results.evidence.sweeps[0].shapes
    assert shape.verdict == "SLOWER" and shape.ratio is not None and shape.ratio > 1
    assert shape.head_of_roofline is not None and shape.base_of_roofline is not None
    (row,) = results.evidence.compiler.rows  # type: ignore[union-attr]
    assert row.shapes == ("1000003:bfloat16",) and row.load_bits_max == 16
