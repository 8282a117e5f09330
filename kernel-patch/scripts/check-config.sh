#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# check-config.sh - verify that every line requested by config fragments landed.
#
# Usage: kernel-patch/scripts/check-config.sh CONFIG FRAGMENT...
# Prints each missing symbol as "CONFIG_X: requested 'y', got 'n'" and exits
# 1 if there is any; silent and 0 otherwise. As in merge_config.sh, a later
# fragment's line for a symbol overrides an earlier one's.
set -euo pipefail

config=$1
shift
bad=0
want() {	# symbol and value the fragments ask for; "n" for "is not set"
	sed -n -e 's/^\(CONFIG_[A-Za-z0-9_]*\)=\(.*\)$/\1 \2/p' \
		-e 's/^# \(CONFIG_[A-Za-z0-9_]*\) is not set$/\1 n/p' "$@" |
		awk '{ s = $1; sub(/^[^ ]+ /, "") }
			!(s in v) { order[n++] = s } { v[s] = $0 }
			END { for (i = 0; i < n; i++) print order[i], v[order[i]] }'
}
while read -r sym val; do
	got=$(sed -n -e "s/^$sym=\(.*\)$/\1/p" -e "s/^# $sym is not set$/n/p" "$config")
	[ -z "$got" ] && got=n
	if [ "$got" != "$val" ]; then
		echo "check-config: $sym: requested '$val', got '$got' in $config" >&2
		bad=1
	fi
done < <(want "$@")
if [ $bad -ne 0 ]; then
	echo "check-config: requested options did not land; check their Kconfig dependencies" >&2
	exit 1
fi
