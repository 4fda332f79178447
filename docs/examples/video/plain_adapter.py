"""A process adapter in plain Python, with no helper: one request at a time, read from stdin.

Run: assay video run --adapter-command "python eval/plain_adapter.py"
"""

import json
import sys

for line in sys.stdin:
    request = json.loads(line)
    method = request.get("method")
    if method == "initialize":
        result = {"protocolVersion": 1, "capabilities": {"evaluate": True}}
    elif method == "evaluate":
        sample = request["params"]["sample"]
        result = {"seen_at": sample["timestampS"], "width": sample["image"]["width"]}
    elif method == "close":
        result = None
    else:  # cancel, or a method this adapter does not know
        if "id" in request:
            error = {"message": f"unknown method: {method}"}
            print(json.dumps({"id": request["id"], "error": error}), flush=True)
        continue
    print(json.dumps({"id": request["id"], "result": result}), flush=True)
    if method == "close":
        break
