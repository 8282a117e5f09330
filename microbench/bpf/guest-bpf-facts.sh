#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# guest-bpf-facts.sh - run inside a guest of the bpf flavour: what the BPF
# design of RSEQ operations requires, measured. With rseq-bpf-ops, opbench
# and bpf-fault in the current directory; writes facts.txt (sections
# "== name", each ending in a "result:" line), and exits 0 when every
# step ran (whatever it found), 1 when one could not.
#
#   kernel-log      what the kernel logged when the program was first loaded
#                   (it stays loaded for the sections after)
#   capabilities    rseq-bpf-ops load under setpriv with fewer and fewer
#                   capabilities, and as uid 65534
#   verifier        rseq-bpf-ops probe: the walks not taken, and why
#   unprivileged    opbench --via bpf as uid 65534, before and after the
#                   pins are opened to it (chmod 0666)
#   fault           bpf-fault: a destination unmapped, then read-only, then
#                   mapped but not yet present
#   counters        rseq-bpf-ops status at the end
set -u
rc=0
out=facts.txt
: > "$out"
section() { echo "== $1" >> "$out"; }
result() { echo "result: $*" >> "$out"; }
nobody="--reuid=65534 --regid=65534 --clear-groups"

mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf || rc=1

section kernel-log
dmesg > dmesg-before.txt
if ./rseq-bpf-ops load >> "$out" 2>&1; then
	# What the kernel logged from the first load of the boot on.
	dmesg > dmesg-after.txt
	new=$(($(wc -l < dmesg-after.txt) - $(wc -l < dmesg-before.txt)))
	tail -n "$new" dmesg-after.txt >> "$out"
	result "$new kernel log line(s) at load, $(tail -n "$new" dmesg-after.txt | grep -c -i 'probe_write_user') naming bpf_probe_write_user"
else
	result "loading failed"
	rc=1
fi

section capabilities
i=0
loaded=
refused=
while read -r label opts; do
	i=$((i + 1))
	dir=/sys/fs/bpf/facts-$i
	# shellcheck disable=SC2086 # setpriv's options
	msg=$(setpriv $opts -- ./rseq-bpf-ops load "$dir" 2>&1)
	st=$?
	./rseq-bpf-ops unload "$dir" > /dev/null 2>&1
	echo "$label: exit $st: $(echo "$msg" | tail -1)" >> "$out"
	[ $st = 0 ] && loaded="$loaded $label" || refused="$refused $label"
done <<'LIST'
uid-65534-no-caps --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all
root-cap_bpf --inh-caps=-all --bounding-set=-all,+bpf
root-cap_bpf+perfmon --inh-caps=-all --bounding-set=-all,+bpf,+perfmon
root-cap_bpf+perfmon+sys_admin --inh-caps=-all --bounding-set=-all,+bpf,+perfmon,+sys_admin
root-cap_sys_admin --inh-caps=-all --bounding-set=-all,+sys_admin
root-all-caps --inh-caps=-all
LIST
result "loads with:${loaded:- none}; refused with:${refused:- none}"

section verifier
# Each walk verified once; a guest-side limit, so that a verifier that
# takes longer than the boot still leaves the other sections.
timeout "${PROBE_TIMEOUT:-900}" ./rseq-bpf-ops probe >> "$out" 2>&1 || {
	echo "rseq-bpf-ops probe: exit $? (124: stopped after ${PROBE_TIMEOUT:-900} s)" >> "$out"
	rc=1
}
result "$(grep -c ': refused' "$out") walk(s) refused, $(grep -c '^  accepted' "$out") accepted"

section unprivileged
# shellcheck disable=SC2086 # setpriv's options
setpriv $nobody --inh-caps=-all --bounding-set=-all -- \
	./opbench --via bpf -n 1 -l 200 -s 2 -w 1 -q switch > unpriv-closed.json 2>> "$out"
echo "pins as loaded ($(stat -c %A "/sys/fs/bpf/rseq-opbench/sets")): $(grep -c '"kind":"sample"' unpriv-closed.json) sample(s), $(grep '"kind":"unsupported"' unpriv-closed.json | grep -o '"why":"[^"]*"' | head -1)" >> "$out"
chmod 0666 /sys/fs/bpf/rseq-opbench/sets /sys/fs/bpf/rseq-opbench/slot_of
# shellcheck disable=SC2086 # setpriv's options
setpriv $nobody --inh-caps=-all --bounding-set=-all -- \
	./opbench --via bpf -n 1 -l 200 -s 2 -w 1 -q switch > unpriv-open.json 2>> "$out"
echo "pins opened (0666): $(grep -c '"kind":"sample"' unpriv-open.json) sample(s), $(grep -c '"valid":true' unpriv-open.json) valid record(s), $(grep -c '"valid":false' unpriv-open.json) invalid" >> "$out"
chmod 0600 /sys/fs/bpf/rseq-opbench/sets /sys/fs/bpf/rseq-opbench/slot_of
result "uid 65534: refused while the pins are root's 0600 ($(grep -c '"kind":"sample"' unpriv-closed.json) samples); $(grep -c '"kind":"sample"' unpriv-open.json) samples, $(grep -c '"valid":false' unpriv-open.json) invalid, once they are 0666 (then any uid can rewrite any thread's operations)"

section fault
before=$(./rseq-bpf-ops status)
./bpf-fault >> "$out" 2>&1
st=$?
{
	echo "exit status $st"
	echo "counters before: $before"
	echo "counters after:  $(./rseq-bpf-ops status)"
} >> "$out"
[ $st -le 1 ] || rc=1
result "$([ $st = 0 ] && echo "unmapped and read-only destinations: thread alive, not told, the next operation still applied" || echo "bpf-fault exit $st"); $(grep '^not-yet-present' "$out" | tail -1)"

section counters
./rseq-bpf-ops status >> "$out" 2>&1 || rc=1
./rseq-bpf-ops unload >> "$out" 2>&1
result "done"
exit $rc
