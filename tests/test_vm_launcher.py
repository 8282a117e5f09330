# SPDX-License-Identifier: GPL-2.0
"""The QEMU launcher: argument building (no boot) and real boots (rig)."""
import argparse
import json
import os
import subprocess

import pytest

import opbench_vm as vm
from conftest import TOP, fake_manifest, kernel_dir

LAUNCHER = os.path.join(TOP, "vm-images", "opbench-vm")
RUNNER = os.path.join(TOP, "vm-images", "guest-run")


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
    assert cmd[cmd.index("-cpu") + 1] == "host,-arch-capabilities"
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


def test_pvm_host_falls_back_to_tcg(tmp_path):
    (tmp_path / "kvm_pvm").mkdir()
    dev = tmp_path / "kvm"
    dev.write_text("")
    st = vm.kvm_status(str(dev), str(tmp_path))
    assert st[0] is False and "kvm_pvm" in st[1]
    accel, _, warning = vm.choose_accel("auto", st)
    assert accel == "tcg" and "falling back to TCG" in warning
    with pytest.raises(vm.LaunchError):
        vm.choose_accel("kvm", st)


def test_real_kvm_is_chosen(tmp_path):
    dev = tmp_path / "kvm"
    dev.write_text("")
    st = vm.kvm_status(str(dev), str(tmp_path))
    assert st[0] is True
    assert vm.choose_accel("auto", st)[:1] == ("kvm",)
    assert vm.choose_accel("icount", st)[0] == "icount"


def test_no_kvm_device(tmp_path):
    st = vm.kvm_status(str(tmp_path / "nokvm"), str(tmp_path))
    assert st == (False, "/dev/kvm does not exist")


def test_pin_parsing():
    assert vm.parse_pin("", 2) is None
    assert vm.parse_pin("0,1", 2) == [0, 1]
    for bad in ("0", "a,b", "0,99999"):
        with pytest.raises(vm.LaunchError):
            vm.parse_pin(bad, 2)


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
                  "--out", str(out), "--accel", "icount", "--append", "no5lvl",
                  "--dry-run", "--", "./guest-stress.sh", env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    kernel = str(tmp_path / "trixie_debug_control" / "bzImage")
    assert lines[0] == "kernel:  " + kernel
    assert lines[1] == "image:   " + str(tmp_path / "img")
    assert lines[3] == "guest:   ./guest-stress.sh"
    qemu = lines[4]
    assert qemu.startswith("qemu-system-x86_64 ") and "-icount" in qemu
    assert "-kernel " + kernel in qemu and "no5lvl" in qemu
    assert "path=%s," % out in qemu
    assert not out.exists()         # a dry run writes nothing


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
    r, rec = boot(image, tmp_path, "sleep", "3600", timeout=25)
    assert r.returncode == vm.EXIT_TIMEOUT
    assert "guest timed out" in r.stderr
    assert "  | " in r.stderr        # the console tail follows
    assert rec["outcome"] == "timeout"


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
def test_icount_boot(image, tmp_path):
    r, rec = boot(image, tmp_path, "true", accel="icount")
    assert r.returncode == 0, r.stderr
    assert "-icount" in rec["qemu_command"]
