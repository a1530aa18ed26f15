#!/usr/bin/env bash
# Rebuild certificates/audit-example/: the claims (tools/make_audit_example.py,
# needs python3-numpy), the audit with 2 jobs and 5 s per open claim, and the
# report.  About two minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
EX=certificates/audit-example
/usr/bin/python3 tools/make_audit_example.py
rm -rf "$EX/results" "$EX/claims" "$EX/audit.json" "$EX/report.html"
(cd "$EX" && ../../build/rankcert audit claims.csv -o . --jobs "${JOBS:-2}" --time-budget "${BUDGET:-5}")
build/rankcert report "$EX" -o "$EX/report.html"
