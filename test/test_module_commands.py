"""`python -m torch_opencl`'s command line: --help names every command, an unknown command is an error that
shows the usage (the report itself and warmup are tested in test_selection.py and test_first_run.py)."""
import os
import subprocess
import sys


def _run(*args):
    env = dict(os.environ, TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    return subprocess.run([sys.executable, "-m", "torch_opencl", *args], env=env, capture_output=True, text=True,
                          timeout=120, cwd=os.path.dirname(os.path.abspath(__file__)))


def test_help_lists_the_commands():
    proc = _run("--help")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("usage: python -m torch_opencl [COMMAND] [ARGS]")
    for command in ("(none)", "warmup [ARGS]", "-h, --help", "python -m torch_opencl.tune --help"):
        assert command in proc.stdout, (command, proc.stdout)


def test_unknown_command_is_an_error_with_the_usage():
    proc = _run("warmpu")
    assert proc.returncode == 2
    assert "unknown command 'warmpu'" in proc.stderr
    assert "usage: python -m torch_opencl" in proc.stderr
    assert proc.stdout == ""
