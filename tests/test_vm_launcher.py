# SPDX-License-Identifier: GPL-2.0
"""The QEMU launcher: argument building (no boot) and real boots (rig)."""
import argparse
import json
import os
import shutil
import stat
import subprocess
import types

import pytest

import opbench_vm as vm
from conftest import TOP, fake_manifest, kernel_dir
from test_microbench import guest_opbench  # noqa: F401 (a fixture)

LAUNCHER = os.path.join(TOP, "vm-images", "opbench-vm")
RUNNER = os.path.join(TOP, "vm-images", "guest-run")
KVM_DATA = os.path.join(TOP, "tests", "data", "kvm")


def opts(**kw):
    o = argparse.Namespace(qemu="qemu-system-x86_64", smp=2, mem="2G",
                           kernel="/k/bzImage", image="/i/root.ext4",
                           share="/s", append="", pin_cpus=None)
    for k, v in kw.items():
        setattr(o, k, v)
    return o


def test_kvm_args_avoid_msr_0x10a_abort():
    cmd = vm.build_command(opts(), "kvm", "/s/console.log", "x.sh")
    i = cmd.index("-accel")
    assert cmd[i + 1] == "kvm"
    assert cmd[cmd.index("-cpu") + 1].startswith("host,-arch-capabilities")
    assert "-icount" not in cmd


def test_icount_args():
    cmd = vm.build_command(opts(), "icount", "/s/console.log", "x.sh")
    assert cmd[cmd.index("-icount") + 1] == "shift=0,align=off,sleep=off"
    assert cmd[cmd.index("-accel") + 1] == "tcg"


def test_tcg_args():
    cmd = vm.build_command(opts(), "tcg", "/s/console.log", "x.sh")
    assert cmd[cmd.index("-accel") + 1].startswith("tcg")
    assert "-icount" not in cmd and "host,-arch-capabilities" not in cmd


def test_common_args():
    cmd = vm.build_command(opts(smp=3, mem="1G", append="foo=1"), "tcg",
                           "/s/c.log", "x.sh", "/q/sock")
    assert cmd[0] == "qemu-system-x86_64"
    assert cmd[cmd.index("-smp") + 1] == "3"
    assert cmd[cmd.index("-m") + 1] == "1G"
    assert "-no-reboot" in cmd
    assert cmd[cmd.index("-serial") + 1] == "file:/s/c.log"
    assert cmd[cmd.index("-kernel") + 1] == "/k/bzImage"
    app = cmd[cmd.index("-append") + 1]
    assert "console=ttyS0" in app and "opbench.cmd=x.sh" in app
    assert app.endswith("foo=1")
    drive = cmd[cmd.index("-drive") + 1]
    assert "file=/i/root.ext4" in drive and "snapshot=on" in drive
    assert "path=/s," in cmd[cmd.index("-virtfs") + 1]
    assert cmd[cmd.index("-qmp") + 1].startswith("unix:/q/sock")


def cpuinfo(name):
    """A /proc/cpuinfo fixture (tests/data/kvm/README)."""
    return os.path.join(KVM_DATA, "cpuinfo-" + name)


def host(tmp_path, modules=(), dev_mode=0o660):
    """A fake /sys/module holding modules, and a /dev/kvm stand-in (a
    plain file with dev_mode; None: no /dev/kvm). Returns (dev, sysmod)."""
    sysmod = tmp_path / "module"
    sysmod.mkdir(parents=True)
    for m in modules:
        (sysmod / m / "parameters").mkdir(parents=True)
    dev = tmp_path / "kvm"
    if dev_mode is not None:
        dev.write_text("")
        dev.chmod(dev_mode)
    return str(dev), str(sysmod)


ROOT = (0, {0})


def test_pvm_host_falls_back_to_tcg(tmp_path):
    dev, sysmod = host(tmp_path, ["kvm", "kvm_pvm"])
    st = vm.kvm_status(dev, sysmod, cpuinfo("no-virt"), ROOT)
    assert st[0] is False and "kvm_pvm" in st[1]
    accel, _, warning = vm.choose_accel("auto", st)
    assert accel == "tcg" and "falling back to TCG" in warning
    with pytest.raises(vm.LaunchError):
        vm.choose_accel("kvm", st)


@pytest.mark.parametrize("cpu,module", [("intel-vmx", "kvm_intel"),
                                        ("amd-svm", "kvm_amd")])
def test_real_kvm_is_chosen(tmp_path, cpu, module):
    dev, sysmod = host(tmp_path, ["kvm", module])
    st = vm.kvm_status(dev, sysmod, cpuinfo(cpu), ROOT)
    assert st == (True, "%s is usable (%s)" % (dev, module))
    # As whoever runs the tests: the stand-in is theirs, mode 0660.
    assert vm.kvm_status(dev, sysmod, cpuinfo(cpu)) == st
    assert vm.choose_accel("auto", st)[:1] == ("kvm",)
    assert vm.choose_accel("icount", st)[0] == "icount"


def test_no_kvm_device(tmp_path):
    """No /dev/kvm: the message says which module to load, or, with the
    module loaded, that a container has not been given the device."""
    dev, sysmod = host(tmp_path, dev_mode=None)
    st = vm.kvm_status(dev, sysmod, cpuinfo("intel-vmx"), ROOT)
    assert st[0] is False
    assert st[1] == ("%s does not exist: load KVM (`sudo modprobe "
                     "kvm_intel`)" % dev)
    dev, sysmod = host(tmp_path / "c", ["kvm", "kvm_amd"], dev_mode=None)
    st = vm.kvm_status(dev, sysmod, cpuinfo("amd-svm"), ROOT)
    assert st[0] is False and "although kvm_amd is loaded" in st[1]
    assert "--device /dev/kvm" in st[1]


def test_cpuinfo_flags_line_not_vmx_flags(tmp_path):
    """The 'flags' line is read, not 'vmx flags'; no file reads as None
    (the check is skipped), a file without flags as none."""
    flags = vm.cpu_flags(cpuinfo("intel-vmx"))
    assert {"vmx", "constant_tsc", "nonstop_tsc"} <= flags
    assert "ept_x_only" not in flags          # a 'vmx flags' word
    assert "svm" in vm.cpu_flags(cpuinfo("amd-svm"))
    assert not vm.cpu_flags(cpuinfo("no-virt")) & {"vmx", "svm"}
    assert vm.cpu_flags(str(tmp_path / "none")) is None
    (tmp_path / "empty").write_text("processor\t: 0\n")
    assert vm.cpu_flags(str(tmp_path / "empty")) == set()


def test_cpu_without_virtualisation(tmp_path):
    """No vmx or svm flag: the CPU, or the hypervisor above, does not
    expose virtualisation, whatever /dev/kvm and the modules say."""
    dev, sysmod = host(tmp_path, ["kvm", "kvm_intel"])
    usable, why = vm.kvm_status(dev, sysmod, cpuinfo("no-virt"), ROOT)
    assert usable is False
    assert "no vmx or svm flag in %s" % cpuinfo("no-virt") in why
    assert "firmware" in why and "nested virtualisation" in why
    with pytest.raises(vm.LaunchError) as e:
        vm.choose_accel("kvm", (usable, why))
    assert "no vmx or svm flag" in str(e.value)
    assert "--accel tcg" in str(e.value)


@pytest.mark.parametrize("cpu,module", [("intel-vmx", "kvm_intel"),
                                        ("amd-svm", "kvm_amd")])
def test_kvm_module_without_vendor_module(tmp_path, cpu, module):
    dev, sysmod = host(tmp_path, ["kvm"])
    usable, why = vm.kvm_status(dev, sysmod, cpuinfo(cpu), ROOT)
    assert usable is False
    assert "kvm module is loaded but neither kvm_intel nor kvm_amd" in why
    assert "`sudo modprobe %s`" % module in why and "dmesg" in why


def test_kvm_device_permissions(tmp_path):
    """kvm_status as another user (ids), judged from the mode bits: as
    root, os.access would always say yes."""
    dev, sysmod = host(tmp_path, ["kvm", "kvm_intel"], dev_mode=0o660)
    gid = os.stat(dev).st_gid
    usable, why = vm.kvm_status(dev, sysmod, cpuinfo("intel-vmx"),
                                (4242, {4243}))
    assert usable is False
    assert "is not readable and writable by user" in why
    assert "mode 0660" in why and "usermod -aG" in why
    assert vm.kvm_status(dev, sysmod, cpuinfo("intel-vmx"),
                         (4242, {4243, gid}))[0] is True
    os.chmod(dev, 0o600)
    assert vm.kvm_status(dev, sysmod, cpuinfo("intel-vmx"),
                         (4242, {gid}))[0] is False
    assert vm.kvm_status(dev, sysmod, cpuinfo("intel-vmx"), ROOT)[0] is True


def stat_of(mode, uid=0, gid=108):
    return types.SimpleNamespace(st_mode=stat.S_IFCHR | mode, st_uid=uid,
                                 st_gid=gid)


NAMES = {"user": "alice", "owner": "root", "group": "kvm", "members": []}


@pytest.mark.parametrize("mode,uid,gids,ok", [
    (0o600, 0, set(), True),          # root
    (0o660, 1000, {1000, 108}, True),  # in group kvm
    (0o666, 1000, {1000}, True),       # anyone
    (0o660, 1000, {1000}, False),      # not in group kvm
    (0o606, 1000, {1000, 108}, False),  # the group's bits rule a member
    (0o600, 1000, {1000}, False),
])
def test_dev_access_decided_from_mode_bits(mode, uid, gids, ok):
    problem = vm.dev_access_problem("/dev/kvm", stat_of(mode), uid, gids,
                                    NAMES)
    assert (problem is None) == ok, problem


def test_dev_access_names_the_group_and_the_fix():
    why = vm.dev_access_problem("/dev/kvm", stat_of(0o660), 1000, {1000},
                                NAMES)
    assert why.startswith("/dev/kvm (mode 0660, owner root, group kvm) is "
                          "not readable and writable by user alice")
    assert "`sudo usermod -aG kvm alice`" in why and "log in again" in why
    # In /etc/group already, not yet in this session's groups.
    why = vm.dev_access_problem("/dev/kvm", stat_of(0o660), 1000, {1000},
                                dict(NAMES, members=["alice"]))
    assert "alice is in group kvm" in why and "`newgrp kvm`" in why
    # A device the group cannot use either (root:root 0600).
    why = vm.dev_access_problem("/dev/kvm", stat_of(0o600, gid=0), 1000,
                                {1000}, dict(NAMES, group="root"))
    assert "group root" in why and 'GROUP="kvm", MODE="0660"' in why
    assert "usermod -aG kvm alice" in why


def test_pin_parsing():
    assert vm.parse_pin("", 2) is None
    assert vm.parse_pin("0,1", 2) == [0, 1]
    for bad in ("0", "a,b", "0,99999"):
        with pytest.raises(vm.LaunchError):
            vm.parse_pin(bad, 2)


def sysfs(tmp_path, cores, online=None, isolated=None,
          name="core_cpus_list"):
    """A fake sysfs root: cores lists each physical core's CPUs, as
    [[0, 4], [1, 5], ...]; the topology file is core_cpus_list (kernels
    from 5.7) or thread_siblings_list (older ones); name=None: none."""
    base = tmp_path / "sys" / "devices" / "system" / "cpu"
    base.mkdir(parents=True)
    every = sorted(c for core in cores for c in core)
    (base / "online").write_text(
        (online if online is not None else vm.format_cpulist(every)) + "\n")
    if isolated is not None:
        (base / "isolated").write_text(isolated + "\n")
    for core in cores:
        for c in core:
            topo = base / ("cpu%d" % c) / "topology"
            topo.mkdir(parents=True)
            if name:
                (topo / name).write_text(vm.format_cpulist(core) + "\n")
    return str(tmp_path / "sys")


SMT_4x2 = [[0, 4], [1, 5], [2, 6], [3, 7]]
ALL = set(range(64))


def test_cpulists():
    assert vm.parse_cpulist("0-3,8,10-11\n") == {0, 1, 2, 3, 8, 10, 11}
    assert vm.parse_cpulist("\n") == set()
    assert vm.format_cpulist({0, 1, 2, 5, 7, 8}) == "0-2,5,7-8"


@pytest.mark.parametrize("name", ["core_cpus_list", "thread_siblings_list"])
def test_pinning_one_core_per_vcpu_away_from_cpu0(tmp_path, name):
    """4 cores x 2 threads, siblings 0,4 / 1,5 / ...: two vCPUs get two
    cores, neither the one that holds CPU 0, and no SMT sibling pair."""
    root = sysfs(tmp_path, SMT_4x2, name=name)
    p = vm.vcpu_pinning(2, root, ALL)
    assert p["cpus"] == [1, 2]
    assert p["cores"] == [[1, 5], [2, 6]]
    assert "vCPU 0 -> CPU 1 (core 1,5), vCPU 1 -> CPU 2 (core 2,6)" \
        in p["why"]
    assert "core of CPU 0 (0,4)" in p["why"] and "left out" in p["why"]
    # Three cores without CPU 0: still enough for three vCPUs.
    assert vm.vcpu_pinning(3, root, ALL)["cpus"] == [1, 2, 3]
    # Four vCPUs need CPU 0's core too, and say so.
    p = vm.vcpu_pinning(4, root, ALL)
    assert p["cpus"] == [0, 1, 2, 3]
    assert "core of CPU 0 (0,4) used" in p["why"]


def test_pinning_without_smt(tmp_path):
    root = sysfs(tmp_path, [[0], [1]])
    assert vm.vcpu_pinning(2, root, ALL)["cpus"] == [0, 1]
    assert vm.vcpu_pinning(1, root, ALL)["cpus"] == [1]


def test_pinning_prefers_isolated_cpus(tmp_path):
    root = sysfs(tmp_path / "a", SMT_4x2, isolated="2-3,6-7")
    p = vm.vcpu_pinning(2, root, ALL)
    assert p["cpus"] == [2, 3] and "on isolated CPUs (2-3,6-7)" in p["why"]
    # Only the sibling threads isolated: the vCPUs go on those threads.
    root = sysfs(tmp_path / "b", SMT_4x2, isolated="6-7")
    assert vm.vcpu_pinning(2, root, ALL)["cpus"] == [6, 7]
    # One isolated core is not enough for two vCPUs: not used, and said.
    root = sysfs(tmp_path / "c", SMT_4x2, isolated="3,7")
    p = vm.vcpu_pinning(2, root, ALL)
    assert p["cpus"] == [1, 2]
    assert "isolated CPUs 3,7 give 1 physical cores for 2 vCPUs: not used" \
        in p["why"]
    # An empty isolated file (no isolcpus=) changes nothing.
    root = sysfs(tmp_path / "d", SMT_4x2, isolated="")
    assert vm.vcpu_pinning(2, root, ALL)["cpus"] == [1, 2]


def test_pinning_stays_within_the_process_cpus(tmp_path):
    """Only CPUs the process may run on (its affinity) and online ones:
    isolcpus= takes isolated CPUs out of every process's affinity, so the
    message says how to hand them over (taskset)."""
    root = sysfs(tmp_path / "a", SMT_4x2, isolated="2-3,6-7")
    p = vm.vcpu_pinning(2, root, {0, 1, 4, 5})
    assert p["cpus"] == [0, 1]
    assert "`taskset -c 2-3,6-7`" in p["why"]
    root = sysfs(tmp_path / "b", SMT_4x2, online="0-2,4-6")
    assert vm.vcpu_pinning(2, root, ALL)["cpus"] == [1, 2]
    with pytest.raises(vm.LaunchError):
        vm.vcpu_pinning(4, root, ALL)


def test_too_few_cores_is_a_clear_error(tmp_path):
    root = sysfs(tmp_path / "a", SMT_4x2)
    with pytest.raises(vm.LaunchError) as e:
        vm.vcpu_pinning(5, root, ALL)
    msg = str(e.value)
    assert msg.startswith("5 vCPUs need 5 physical cores, one each, but "
                          "this process may run on 4 (CPUs 0-7; cores 0,4 "
                          "1,5 2,6 3,7)")
    assert "--smp 4 or fewer" in msg and "--pin 0,1,2,3,4" in msg
    root = sysfs(tmp_path / "b", [[0, 1]])
    with pytest.raises(vm.LaunchError) as e:
        vm.vcpu_pinning(2, root, ALL)
    assert "--smp 1 or fewer" in str(e.value)
    assert "--pin 0,1 to share cores between SMT siblings" in str(e.value)
    root = sysfs(tmp_path / "c", [[0], [1]])
    with pytest.raises(vm.LaunchError) as e:
        vm.vcpu_pinning(3, root, ALL)
    assert "--smp 2 or fewer, or choose host CPUs yourself with --pin" \
        in str(e.value)


def test_pinning_without_topology(tmp_path):
    root = sysfs(tmp_path / "a", [[0], [1], [2]], name=None)
    p = vm.vcpu_pinning(2, root, ALL)
    assert p["cpus"] == [1, 2] and "no SMT topology" in p["why"]
    with pytest.raises(vm.LaunchError) as e:
        vm.vcpu_pinning(2, str(tmp_path / "nosys"), ALL)
    assert "--pin" in str(e.value)


def test_choose_pinning(tmp_path):
    """--pin wins; KVM pins by itself; TCG and icount do not (today's
    behaviour); too few cores: an error under --accel kvm, a warning
    and no pinning when --accel auto chose KVM."""
    root = sysfs(tmp_path, SMT_4x2)
    p, w = vm.choose_pinning(opts(accel="kvm"), "kvm", root, ALL)
    assert (p["source"], p["cpus"], w) == ("auto", [1, 2], None)
    p, _ = vm.choose_pinning(opts(accel="kvm", pin_cpus=[0, 4]), "kvm",
                             root, ALL)
    assert (p["source"], p["cpus"]) == ("--pin", [0, 4])
    for accel in ("tcg", "icount"):
        p, w = vm.choose_pinning(opts(accel=accel), accel, root, ALL)
        assert p["cpus"] is None and p["source"] is None and w is None
        p, _ = vm.choose_pinning(opts(accel=accel, pin_cpus=[3, 2]), accel,
                                 root, ALL)
        assert p["cpus"] == [3, 2]
    with pytest.raises(vm.LaunchError):
        vm.choose_pinning(opts(accel="kvm", smp=5), "kvm", root, ALL)
    p, w = vm.choose_pinning(opts(accel="auto", smp=5), "kvm", root, ALL)
    assert p["cpus"] is None and "--smp 4" in p["why"]
    assert w.startswith("KVM vCPUs not pinned")


def test_kvm_command_and_record(tmp_path):
    """Under KVM: -cpu host without arch-capabilities, with an invariant
    TSC; the TSC as the guest's clock; a QMP socket to pin by; and
    vm.json's pinning map, its reason and the clock options."""
    o = opts(accel="kvm")
    pinning, _ = vm.choose_pinning(o, "kvm", sysfs(tmp_path, SMT_4x2), ALL)
    cmd = vm.build_command(o, "kvm", "/s/console.log", "x.sh",
                           "/q/sock" if pinning["cpus"] else None)
    assert cmd[cmd.index("-accel") + 1] == "kvm"
    assert cmd[cmd.index("-cpu") + 1] == "host,-arch-capabilities,+invtsc"
    app = cmd[cmd.index("-append") + 1].split()
    assert "tsc=reliable" in app and "clocksource=tsc" in app
    assert cmd[cmd.index("-qmp") + 1] == "unix:/q/sock,server=on,wait=off"
    assert "-icount" not in cmd and "-plugin" not in cmd
    clock = vm.clock_record("kvm", cpuinfo("intel-vmx"))
    rec = json.loads(json.dumps(vm.launch_record("kvm", pinning, clock)))
    assert rec["accel"] == "kvm" and rec["cpu"] == cmd[cmd.index("-cpu") + 1]
    assert rec["pin"] == [1, 2]
    assert rec["pinning"]["source"] == "auto"
    assert rec["pinning"]["cores"] == [[1, 5], [2, 6]]
    assert "SMT siblings left to the host" in rec["pinning"]["why"]
    assert rec["clock"]["cpu_flags"] == ["+invtsc"]
    assert rec["clock"]["kernel_args"] == ["tsc=reliable", "clocksource=tsc"]
    assert rec["clock"]["host_invariant_tsc"] is True
    assert rec["clock"]["warning"] is None


def test_kvm_host_without_invariant_tsc_is_a_warning():
    clock = vm.clock_record("kvm", cpuinfo("vmx-no-invtsc"))
    assert clock["host_invariant_tsc"] is False
    assert "TSC is not invariant" in clock["warning"]
    assert "nonstop_tsc" in clock["warning"]
    assert vm.clock_record("kvm", cpuinfo("amd-svm"))["warning"] is None


def test_tcg_record_has_no_pinning_and_no_kvm_clock():
    for accel in ("tcg", "icount"):
        pinning = vm.choose_pinning(opts(accel=accel), accel)[0]
        rec = vm.launch_record(accel, pinning)
        assert rec["pin"] is None and rec["pinning"]["source"] is None
        assert rec["clock"]["cpu_flags"] == []
        assert rec["clock"]["warning"] is None


@pytest.fixture
def kvm_host(tmp_path, monkeypatch):
    """main() on a made-up host with real KVM, booting nothing: KVM
    usable, the 4x2 topology, an Intel cpuinfo, a stand-in qemu (prints
    a version) and a boot_once that records what it was given and
    answers from the list `answers` (None: the KVM probe saw nothing)."""
    root = sysfs(tmp_path, SMT_4x2)
    real_pinning, real_clock = vm.vcpu_pinning, vm.clock_record
    monkeypatch.setattr(vm, "kvm_status",
                        lambda: (True, "/dev/kvm is usable (kvm_intel)"))
    monkeypatch.setattr(vm, "vcpu_pinning",
                        lambda smp, *_: real_pinning(smp, root, ALL))
    monkeypatch.setattr(vm, "clock_record", lambda accel, *_: real_clock(
        accel, cpuinfo("intel-vmx")))
    qemu = tmp_path / "qemu-system-x86_64"
    qemu.write_text("#!/bin/sh\necho 'QEMU emulator version 7.2.0'\n")
    qemu.chmod(0o755)
    for f in ("bzImage", "root.ext4"):
        (tmp_path / f).write_text("")
    (tmp_path / "share").mkdir()
    calls, answers = [], []

    def boot_once(opts, accel, script, logfile, record, pin=None,
                  probe=None):
        calls.append({"accel": accel, "pin": pin, "probe": probe})
        record["qemu_command"] = vm.build_command(opts, accel, logfile,
                                                  script, "/q" if pin
                                                  else None)
        status = answers.pop(0) if answers else 0
        return (status, "ok" if status is not None else "no output")
    monkeypatch.setattr(vm, "boot_once", boot_once)

    def main(*args):
        rec = tmp_path / "vm.json"
        if rec.exists():
            rec.unlink()
        status = vm.main(["--kernel", str(tmp_path / "bzImage"), "--image",
                          str(tmp_path / "root.ext4"), "--share",
                          str(tmp_path / "share"), "--qemu", str(qemu),
                          "--record", str(rec)] + list(args) + ["--", "true"])
        return status, json.loads(rec.read_text())
    return types.SimpleNamespace(main=main, calls=calls, answers=answers)


def test_main_pins_and_records_under_kvm(kvm_host):
    status, rec = kvm_host.main("--accel", "kvm")
    assert status == 0
    assert kvm_host.calls == [{"accel": "kvm", "pin": [1, 2],
                               "probe": None}]
    assert rec["pin"] == [1, 2] and rec["pinning"]["source"] == "auto"
    assert "core of CPU 0 (0,4)" in rec["pinning"]["why"]
    assert rec["cpu"] == "host,-arch-capabilities,+invtsc"
    assert rec["clock"]["cpu_flags"] == ["+invtsc"]
    assert rec["clock"]["host_invariant_tsc"] is True
    cmd = rec["qemu_command"]
    assert cmd[cmd.index("-cpu") + 1] == rec["cpu"] and "-qmp" in cmd
    assert rec["warnings"] == []
    # --pin wins (parse_pin checks against this machine's CPUs: 2 here).
    status, rec = kvm_host.main("--accel", "kvm", "--pin", "1,0")
    assert status == 0 and kvm_host.calls[-1]["pin"] == [1, 0]
    assert rec["pin"] == [1, 0] and rec["pinning"]["source"] == "--pin"


def test_main_too_few_cores_under_kvm(kvm_host, capsys):
    assert vm.main(["--kernel", "k", "--image", "i", "--share", "/s",
                    "--accel", "kvm", "--smp", "5", "--show-command", "--",
                    "true"]) == 2
    err = capsys.readouterr().err
    assert "opbench-vm: error: 5 vCPUs need 5 physical cores" in err
    assert "--smp 4 or fewer" in err
    status, rec = kvm_host.main("--accel", "auto", "--smp", "5")
    assert status == 0 and rec["pin"] is None
    assert kvm_host.calls[-1]["pin"] is None
    assert any(w.startswith("KVM vCPUs not pinned") for w in rec["warnings"])


def test_main_kvm_probe_fallback_unpins(kvm_host):
    """--accel auto: a KVM guest that prints nothing is booted again
    under TCG, unpinned, and the record says TCG throughout."""
    kvm_host.answers[:] = [None, 0]
    status, rec = kvm_host.main("--accel", "auto")
    assert status == 0
    assert [(c["accel"], c["pin"]) for c in kvm_host.calls] == [
        ("kvm", [1, 2]), ("tcg", None)]
    assert kvm_host.calls[0]["probe"] == 15
    assert rec["accel"] == "tcg" and rec["cpu"] == "max"
    assert rec["pin"] is None and rec["pinning"]["source"] is None
    assert rec["clock"]["cpu_flags"] == []
    assert "-qmp" not in rec["qemu_command"]
    assert "falling back to TCG" in rec["warnings"][-1]


# The TCG and icount commands as they were before the KVM path changed:
# byte for byte, so that TCG and icount results stay comparable.
BEFORE = {
    "tcg": ["-accel", "tcg,thread=multi", "-cpu", "max"],
    "icount": ["-accel", "tcg", "-cpu", "max", "-icount",
               "shift=0,align=off,sleep=off"]}
APPEND = ("console=ttyS0 root=/dev/vda rootfstype=ext4 rw "
          "init=/sbin/opbench-init panic=-1 loglevel=5 tsc=reliable "
          "clocksource=tsc acpi=noirq i8042.noaux i8042.nokbd ")


@pytest.mark.parametrize("accel", ["tcg", "icount"])
def test_tcg_and_icount_commands_unchanged(accel):
    head = ["qemu-system-x86_64", "-machine", "pc", "-smp", "2", "-m", "2G",
            "-nodefaults", "-no-user-config", "-display", "none",
            "-no-reboot"]
    tail = ["-drive", "file=/i/root.ext4,format=raw,if=virtio,snapshot=on",
            "-virtfs", "local,path=/s,mount_tag=share,security_model=none,"
            "id=share"]
    assert vm.build_command(opts(), accel, "/s/console.log", "x.sh") == (
        head + BEFORE[accel] + ["-kernel", "/k/bzImage", "-append",
                                APPEND + "opbench.cmd=x.sh"]
        + tail + ["-serial", "file:/s/console.log"])
    o = opts(append="foo=1", plugin="file=/p.so,arg=x")
    assert vm.build_command(o, accel, "/s/c.log", "y.sh", "/q/sock") == (
        head + BEFORE[accel] + ["-kernel", "/k/bzImage", "-append",
                                APPEND + "opbench.cmd=y.sh foo=1"]
        + tail + ["-serial", "file:/s/c.log", "-qmp",
                  "unix:/q/sock,server=on,wait=off", "-plugin",
                  "file=/p.so,arg=x"])


def test_splat_detection():
    text = ("[    1.0] ok\n[    2.0] WARNING: CPU: 0 PID: 1 at kernel/rseq.c\n"
            "[    3.0] BUG: KASAN: slab-out-of-bounds\nfine\n")
    assert len(vm.find_splats(text)) == 2
    assert vm.find_splats("all good\nOPBENCH-EXIT: 0\n") == []


@pytest.mark.parametrize("line", [
    "[   40.1] INFO: task kworker/0:1:12 blocked for more than 30 seconds.",
    "[    9.2] WARNING: possible circular locking dependency detected",
    "[    9.2] WARNING: possible recursive locking detected",
    "[    9.3] WARNING: inconsistent lock state",
    "[    9.4] WARNING: suspicious RCU usage",
    "[   12.0] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:",
    "[   13.0] watchdog: BUG: soft lockup - CPU#0 stuck for 22s!",
    "[   14.0] kmemleak: 2 new suspected memory leaks",
    "[   15.0] BUG: KASAN: use-after-free in rseq_ops_apply",
])
def test_one_kernel_problem_pattern(line):
    """The one pattern every boot is judged by: what stress.sh and the
    launcher once checked separately, lockdep and kmemleak included."""
    assert vm.find_splats("[    1.0] ok\n%s\nfine\n" % line) == [line]


def guest_run(tmp_path, *args, env=None):
    return subprocess.run([RUNNER] + list(args), capture_output=True,
                          text=True, timeout=300, env=env)


def test_guest_run_dry_run_resolves_from_manifest(tmp_path):
    m = fake_manifest(tmp_path, ["trixie/debug/control", "trixie/default/ops"])
    env = dict(os.environ, MANIFEST=m)
    out = tmp_path / "boot"
    r = guest_run(tmp_path, "--flavour", "control", "--kconfig", "debug",
                  "--out", str(out), "--accel", "icount", "--append",
                  "nokaslr", "--dry-run", "--", "./guest-stress.sh", env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    kernel = str(tmp_path / "trixie_debug_control" / "bzImage")
    assert lines[0] == "kernel:  " + kernel
    assert lines[1] == "image:   " + str(tmp_path / "img")
    assert lines[3] == "guest:   ./guest-stress.sh"
    qemu = lines[4]
    assert qemu.startswith("qemu-system-x86_64 ") and "-icount" in qemu
    assert "-kernel " + kernel in qemu and "nokaslr" in qemu
    assert "no5lvl" not in qemu     # no CONFIG_KASAN=y in its config
    assert "path=%s," % out in qemu
    assert not out.exists()         # a dry run writes nothing


def test_guest_run_boots_kasan_kernels_with_four_level_paging(tmp_path):
    """A KASAN kernel boots with no5lvl (its boot-time false report under
    LA57, see guest_run.KASAN_ARGS), before the caller's own arguments; a
    kernel without KASAN boots without it."""
    m = fake_manifest(tmp_path, ["trixie/debug/ops", "trixie/default/ops"])
    (tmp_path / "trixie_debug_ops" / "config").write_text(
        "CONFIG_KASAN=y\nCONFIG_KASAN_GENERIC=y\n")
    (tmp_path / "trixie_default_ops" / "config").write_text(
        "# CONFIG_KASAN is not set\n")
    env = dict(os.environ, MANIFEST=m)
    qemu = {}
    for kconfig in ("debug", "default"):
        r = guest_run(tmp_path, "--flavour", "ops", "--kconfig", kconfig,
                      "--out", str(tmp_path / kconfig), "--accel", "tcg",
                      "--append", "nokaslr", "--dry-run", "--", "true",
                      env=env)
        assert r.returncode == 0, r.stderr
        qemu[kconfig] = r.stdout.splitlines()[4]
    assert "no5lvl nokaslr" in qemu["debug"]
    assert "no5lvl" not in qemu["default"]
    assert "nokaslr" in qemu["default"]


def test_guest_run_names_what_is_missing(tmp_path):
    m = fake_manifest(tmp_path, ["trixie/default/ops"])
    env = dict(os.environ, MANIFEST=m)
    r = guest_run(tmp_path, "--flavour", "baseline", "--out",
                  str(tmp_path / "b"), "--accel", "tcg", "--dry-run", "--",
                  "true", env=env)
    assert r.returncode == 2
    assert "guest-run: error: flavour 'baseline'" in r.stderr
    assert "make kernels FLAVOURS=baseline KCONFIG=default" in r.stderr
    r = guest_run(tmp_path, "--flavour", "ops", "--out", str(tmp_path / "b"),
                  "--accel", "tcg", "--dry-run", "--", "true",
                  env=dict(env, MANIFEST=str(tmp_path / "none")))
    assert r.returncode == 2 and "make kernels" in r.stderr


def test_guest_run_never_reuses_a_boot_directory(tmp_path):
    m = fake_manifest(tmp_path, ["trixie/default/ops"])
    out = tmp_path / "boot"
    out.mkdir()
    (out / "console.log").write_text("an earlier boot\n")
    r = guest_run(tmp_path, "--flavour", "ops", "--out", str(out),
                  "--accel", "tcg", "--", "true",
                  env=dict(os.environ, MANIFEST=m))
    assert r.returncode == 2 and "already holds a boot" in r.stderr
    assert (out / "console.log").read_text() == "an earlier boot\n"


def test_the_accelerator_is_the_callers_to_decide(tmp_path):
    """guest-run and opbench-vm have no default accelerator: the scripts
    decide it in one place (scripts/common.sh accel_for)."""
    m = fake_manifest(tmp_path, ["trixie/default/ops"])
    r = guest_run(tmp_path, "--flavour", "ops", "--out", str(tmp_path / "b"),
                  "--dry-run", "--", "true", env=dict(os.environ, MANIFEST=m,
                                                      ACCEL="tcg"))
    assert r.returncode == 2 and "--accel" in r.stderr, r.stderr
    r = subprocess.run([LAUNCHER, "--kernel", "k", "--image", "i", "--share",
                        str(tmp_path), "--show-command", "--", "true"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "--accel" in r.stderr, r.stderr
    base = {k: v for k, v in os.environ.items() if k != "ACCEL"}
    for kind, default in (("measure", "icount"), ("check", "auto")):
        for extra, want in (({}, default), ({"ACCEL": "kvm"}, "kvm")):
            r = subprocess.run(["bash", "-c", ". scripts/common.sh && "
                                "accel_for %s" % kind], cwd=TOP,
                               env=dict(base, **extra), capture_output=True,
                               text=True)
            assert r.stdout.strip() == want, (kind, extra, r.stderr)


def test_show_command_boots_nothing(tmp_path):
    r = subprocess.run([LAUNCHER, "--kernel", "/nonexistent", "--image",
                        "/nonexistent", "--share", str(tmp_path), "--accel",
                        "icount", "--show-command", "--", "true"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert "qemu-system-x86_64" in r.stdout
    assert "shift=0,align=off,sleep=off" in r.stdout
    assert list(tmp_path.iterdir()) == []


def test_missing_kernel_is_a_clear_error(tmp_path):
    r = subprocess.run([LAUNCHER, "--kernel", str(tmp_path / "bzImage"),
                        "--image", str(tmp_path / "img"), "--share",
                        str(tmp_path), "--accel", "tcg", "--", "true"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert "no such file" in r.stderr and "make kernels" in r.stderr


def boot(image, tmp_path, *cmd, flavour="baseline", accel="tcg", timeout=120,
         extra=()):
    rec = tmp_path / "record.json"
    r = subprocess.run([LAUNCHER, "--kernel",
                        os.path.join(kernel_dir(flavour), "bzImage"),
                        "--image", image, "--share", str(tmp_path),
                        "--accel", accel, "--timeout", str(timeout),
                        "--record", str(rec)] + list(extra) + ["--"]
                       + list(cmd),
                       capture_output=True, text=True, timeout=timeout + 60)
    return r, json.loads(rec.read_text())


@pytest.mark.rig
def test_guest_exit_status_propagates(image, tmp_path):
    r, rec = boot(image, tmp_path, "sh", "-c", "echo hello-guest; exit 7")
    assert r.returncode == 7, r.stderr
    assert "hello-guest" in r.stdout
    assert rec["outcome"] == "ok" and rec["boot_to_command_s"] > 0


@pytest.mark.rig
def test_guest_hang_is_killed_at_timeout(image, tmp_path):
    """The command hangs, not the boot: the guest reached it (the
    console's OPBENCH-START, which sets boot_to_command_s), then the
    timeout killed it. Boots take some 8 s (tests/data/quick-run): 40 s
    leave room for a loaded host."""
    r, rec = boot(image, tmp_path, "sleep", "3600", timeout=40)
    assert r.returncode == vm.EXIT_TIMEOUT
    assert "guest timed out" in r.stderr
    assert "  | " in r.stderr        # the console tail follows
    assert rec["outcome"] == "timeout"
    assert "boot_to_command_s" in rec, (
        "the guest never reached the command: the timeout killed a boot, "
        "not a hang; see %s" % (tmp_path / "console.log"))


@pytest.mark.rig
def test_kernel_panic_is_a_failure(image, tmp_path):
    r, rec = boot(image, tmp_path, "sh", "-c",
                  "echo c > /proc/sysrq-trigger; sleep 60")
    assert r.returncode == vm.EXIT_SPLAT, r.stderr
    assert "Kernel panic" in r.stderr
    assert rec["outcome"] == "kernel-splat"


@pytest.mark.rig
def test_share_carries_outputs_back(image, tmp_path):
    r, _ = boot(image, tmp_path, "sh", "-c", "uname -r > out.txt")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "out.txt").read_text().strip().endswith("-baseline")


@pytest.mark.rig
def test_kernel_problem_fails_any_boot(image, tmp_path):
    """A hung-task or lockdep report fails an ordinary boot through the
    runner, as it fails a stress boot: status 125, the lines in
    kernel-problems.txt, whatever the command returned."""
    reports = ["INFO: task opbench:77 blocked for more than 30 seconds.",
               "WARNING: possible circular locking dependency detected"]
    out = tmp_path / "boot"
    r = guest_run(tmp_path, "--flavour", "baseline", "--out", str(out),
                  "--accel", "tcg", "--timeout", "120", "--", "sh", "-c",
                  "; ".join("echo '<3>%s' > /dev/kmsg" % l for l in reports)
                  + "; exit 0")
    assert r.returncode == vm.EXIT_SPLAT, r.stderr
    problems = (out / "kernel-problems.txt").read_text()
    for l in reports:
        assert l in problems, problems


@pytest.mark.rig
def test_icount_boot(guest_opbench, image, tmp_path):
    """The known answer under --accel icount: a TSC tick is one
    instruction. opbench's clock record times a loop of known length
    (microbench/common.c, emit_clock(): 2 x 100000 instructions, the
    difference of two lengths) and must see exactly that many ticks."""
    shutil.copy(guest_opbench, tmp_path / "opbench")
    r, rec = boot(image, tmp_path, "sh", "-c", "./opbench -q -n 0 -l 10 "
                  "-s 1 -w 0 syscall > out.json", accel="icount")
    assert r.returncode == 0, r.stderr
    assert "-icount" in rec["qemu_command"]
    recs = [json.loads(l) for l in
            (tmp_path / "out.json").read_text().splitlines() if l.strip()]
    clock = [x for x in recs if x["kind"] == "clock"]
    assert len(clock) == 1, recs
    assert clock[0]["insns"] == 200000 and clock[0]["ticks"] == 200000, \
        clock[0]


def fake_target_qemu(tmp_path, console):
    """A stand-in for another architecture's QEMU: writes CONSOLE to the
    file of -serial file:PATH, as the initramfs's /init would, then exits
    (or sleeps, with CONSOLE "hang")."""
    q = tmp_path / "qemu-system-fake"
    q.write_text("#!/bin/sh\n"
                 "[ \"$1\" != --version ] || { echo 'QEMU emulator version "
                 "0 (a stand-in)'; exit 0; }\n"
                 "while [ $# -gt 0 ]; do case $1 in -serial) log=${2#file:};"
                 " shift ;; esac; shift; done\n"
                 "%s\n" % ("exec sleep 60" if console == "hang" else
                           "printf '%%s' '%s' > \"$log\"" % console))
    q.chmod(0o755)
    (tmp_path / "k").write_text("")
    (tmp_path / "i.cpio").write_text("")
    return str(q)


def initrd_launch(tmp_path, qemu, *extra, timeout=30):
    rec = tmp_path / "vm.json"
    return subprocess.run(
        [LAUNCHER, "--qemu", qemu, "--machine", "-M mac99 -m 512",
         "--console", "ttyPZ0", "--kernel", str(tmp_path / "k"),
         "--initrd", str(tmp_path / "i.cpio"), "--accel", "icount",
         "--console-log", str(tmp_path / "console.log"), "--record",
         str(rec)] + list(extra), capture_output=True, text=True,
        timeout=timeout + 30), rec


def test_initrd_guest_through_the_one_launcher(tmp_path):
    """Another architecture's guest (correctness/arch-run.sh) boots through
    the same launcher: the target's QEMU and machine, its console, an
    initramfs, TCG or icount without x86's CPU, the same markers, status,
    record and kernel-problem pattern."""
    q = fake_target_qemu(tmp_path, "booting\nOPBENCH-START\nTAP version 13\n"
                         "ok 1 segments\nnot ok 2 rseq_op_test # exit 1\n"
                         "1..2\nOPBENCH-EXIT: 1\n")
    r, rec = initrd_launch(tmp_path, q, "--show-command")
    assert r.returncode == 0, r.stderr
    cmd = r.stdout.split()
    assert cmd[:4] == [q, "-M", "mac99", "-m"]
    assert "-initrd" in cmd and "-icount" in cmd and "-cpu" not in cmd
    assert "-drive" not in r.stdout and "virtfs" not in r.stdout
    assert "console=ttyPZ0 panic=-1 loglevel=5" in r.stdout
    r, rec = initrd_launch(tmp_path, q)
    assert r.returncode == 1, r.stderr
    assert r.stdout.splitlines() == ["TAP version 13", "ok 1 segments",
                                     "not ok 2 rseq_op_test # exit 1", "1..2"]
    v = json.loads(rec.read_text())
    assert v["outcome"] == "ok" and v["initrd"] is True
    # The target's CPU, not x86's: none named by the launcher.
    assert v["cpu"] is None and v["icount"] and "-cpu" not in v["accel_args"]
    assert v["machine"] == "-M mac99 -m 512" and v["timeout_s"] == 600
    q = fake_target_qemu(tmp_path, "OPBENCH-START\nKernel panic - not "
                         "syncing: x\nOPBENCH-EXIT: 0\n")
    r, rec = initrd_launch(tmp_path, q)
    assert r.returncode == 125 and "Kernel panic" in r.stderr
    q = fake_target_qemu(tmp_path, "hang")
    r, rec = initrd_launch(tmp_path, q, "--timeout", "2")
    assert r.returncode == 124 and "timed out after 2s" in r.stderr
    assert json.loads(rec.read_text())["outcome"] == "timeout"


@pytest.mark.parametrize("extra, want", [
    (["--image", "i"], "no --image, --share or command with it"),
    (["--", "true"], "no --image, --share or command with it"),
    (["--accel", "kvm"], "an --initrd guest runs under tcg or icount"),
    (["--pin", "0"], "--pin and --plugin are for the x86_64 guest"),
])
def test_initrd_guest_refusals(tmp_path, extra, want):
    q = fake_target_qemu(tmp_path, "")
    args = [LAUNCHER, "--qemu", q, "--kernel", str(tmp_path / "k"),
            "--initrd", str(tmp_path / "i.cpio"), "--console-log",
            str(tmp_path / "c.log"), "--show-command"]
    if "--accel" not in extra:
        args += ["--accel", "tcg"]
    r = subprocess.run(args + extra, capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 2 and want in r.stderr, r.stderr
