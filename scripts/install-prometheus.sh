#!/usr/bin/env bash
# What test/ops/prometheus-rules.test.ts runs: promtool and Prometheus, its service never left running.
exec bash "$(dirname "$0")/install-debian.sh" prometheus --binaries "promtool prometheus" --services prometheus -- prometheus
