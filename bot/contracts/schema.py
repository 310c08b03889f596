"""JSON Schemas of the files the jobs hand each other, generated from the contract models.

``python -m bot.contracts.schema docs/schema`` writes them; ``tests`` check that the committed
copies are current, so a change to a contract shows up as a change to its schema.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

from bot.contracts.history import HistoryRecord, ScheduledResults
from bot.contracts.plan import Plan
from bot.contracts.results import ResultsFile

# file name -> model: the plan (gate -> measure jobs), a results file (measure -> report), a
# scheduled run's results (scheduled measure -> scheduled report) and a history line
SCHEMAS: dict[str, type[BaseModel]] = {
    "plan.schema.json": Plan,
    "results.schema.json": ResultsFile,
    "scheduled.schema.json": ScheduledResults,
    "history-record.schema.json": HistoryRecord,
}


def schema_text(model: type[BaseModel]) -> str:
    """The model's JSON Schema as stable text (sorted keys, one trailing newline)."""
    schema = model.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return json.dumps(schema, indent=2, sort_keys=True) + "\n"


def write_schemas(out: Path) -> list[Path]:
    """Write every schema into ``out``; the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, model in SCHEMAS.items():
        path = out / name
        path.write_text(schema_text(model), encoding="utf-8")
        written.append(path)
    return written


if __name__ == "__main__":
    import sys

    for written in write_schemas(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/schema")):
        print(f"wrote {written}")
