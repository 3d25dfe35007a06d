#!/usr/bin/env bash
# fs-run: alone (loads both cores; its timings assume nothing beside it)
# torture_session.t: torture.t with session leases (-o session) on mounts a
# and c, and b per-lock judging their rows by their sessions: no two holders
# at once when locks are kept by one session heartbeat per mount and taken
# over by fencing a dead session (issue 8: the torture test passes with
# session leases on too). Everything else as torture.t says.
LOCKFS_TORTURE_SESSION=1 exec bash "$(dirname "$0")/torture.t" "$@"
