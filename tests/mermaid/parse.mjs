// Parse mermaid diagrams with mermaid's own parser (mermaid.parse), as GitHub's renderer would
// read them. Input on stdin: a JSON list of diagram sources. Output on stdout: a JSON list, one
// entry per diagram: {"ok": true, "type": "xychart"} or {"ok": false, "error": "..."}.
// mermaid sanitises text with DOMPurify, which needs a DOM: jsdom gives it one.
import { readFileSync } from "node:fs";
import { JSDOM } from "jsdom";

const dom = new JSDOM("<!DOCTYPE html><body></body>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const { default: mermaid } = await import("mermaid");
mermaid.initialize({ startOnLoad: false });

const sources = JSON.parse(readFileSync(0, "utf8"));
const out = [];
for (const source of sources) {
  try {
    const parsed = await mermaid.parse(source);
    out.push({ ok: true, type: parsed.diagramType });
  } catch (error) {
    out.push({ ok: false, error: String(error.message || error).split("\n").slice(0, 4).join(" ") });
  }
}
process.stdout.write(JSON.stringify(out));
