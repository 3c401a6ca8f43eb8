#!/usr/bin/env python3
"""Regenerates the table reference at the end of schemas/rtrace-schema.md from
schemas/rtrace-v1.json (everything above the marker line is kept)."""
import json, pathlib, sys

root = pathlib.Path(__file__).resolve().parent.parent
schema = json.loads((root / "schemas/rtrace-v1.json").read_text())
doc_path = root / "schemas/rtrace-schema.md"
marker = "<!-- generated below by scripts/gen-schema-doc.py: do not edit -->"
head = doc_path.read_text().split(marker)[0] if doc_path.exists() else ""
out = [head.rstrip() + "\n\n" + marker + "\n", "\n## Objects\n\n| path | kind | table | file kinds | required | attributes |\n|---|---|---|---|---|---|\n"]
for o in schema["objects"]:
    attrs = ", ".join([f"`{k}` ({v})" for k, v in o.get("attributes", {}).items()] +
                      [f"`{k}` ({v}, optional)" for k, v in o.get("optional_attributes", {}).items()])
    out.append(f"| `{o['path']}` | {o['kind']} | {o.get('table','')} | {', '.join(o.get('kinds', [])) or 'any'} | "
               f"{'yes' if o.get('required', True) else 'no'}{' (open)' if o.get('open') else ''} | {attrs} |\n")
out.append("\n## Tables\n\nTypes: i32/i64/u8/u64 little-endian integers, f64 IEEE double, str fixed-length NUL-terminated UTF-8. "
           "Units: `1` dimensionless count, empty for ids/labels, `@unit` = the row's own `unit` field.\n")
for name, t in schema["tables"].items():
    out.append(f"\n### `{name}`\n\n{t['description']}\n\n| field | type | unit |\n|---|---|---|\n")
    for f in t["fields"]:
        out.append(f"| `{f['name']}` | {f['type']} | {f['unit'] or '–'} |\n")
    notes = [f for f in t["fields"] if f.get("note") or f.get("since") or f.get("unit_since")]
    if notes:
        out.append("\n")
        for f in notes:
            since = f" (since {f['since']}; absent from older files, read as NaN/-1)" if f.get("since") else ""
            if f.get("unit_since"):
                since += f" (unit `{f['unit']}` since {f['unit_since']}; older files label it `{f['former_unit']}`)"
            out.append(f"- `{f['name']}`{since}: {f.get('note', '')}\n")
doc_path.write_text("".join(out))
print(f"wrote {doc_path}")
