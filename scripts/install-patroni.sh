#!/usr/bin/env bash
# What support/patroni-cluster.ts runs: Patroni, etcd and HAProxy, their services never left running.
exec bash "$(dirname "$0")/install-debian.sh" patroni --binaries "patroni etcd haproxy" --services "etcd haproxy patroni" -- patroni etcd-server haproxy
