"""`pip install --no-build-isolation ./formats/python` works offline, with no dependency, and installs the package
(built from a copy: a build writes build/ and *.egg-info next to the sources)."""
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def test_pip_installs_offline(tmp_dir):
    source = os.path.join(tmp_dir, 'src')
    shutil.copytree(os.path.join(HERE, '..'), source, ignore=shutil.ignore_patterns('tests', '__pycache__'))
    target = os.path.join(tmp_dir, 'target')
    run = subprocess.run([sys.executable, '-m', 'pip', 'install', '--no-build-isolation', '--no-index', '--no-deps',
                          '--disable-pip-version-check', '--target', target, source],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    probe = subprocess.run([sys.executable, '-c', 'import shardkit, sys; print(shardkit.__file__, shardkit.__version__)'],
                           capture_output=True, text=True, cwd=tmp_dir, timeout=60,
                           env={**os.environ, 'PYTHONPATH': target, 'PYTHONDONTWRITEBYTECODE': '1'})
    assert probe.returncode == 0, probe.stderr
    path, version = probe.stdout.split()
    assert path == os.path.join(target, 'shardkit', '__init__.py') and version == '0.1.0'
    with open(os.path.join(target, 'shardkit-0.1.0.dist-info', 'METADATA')) as f:
        assert 'Requires-Dist' not in ''.join(line for line in f if not line.startswith('Provides-Extra')
                                              and 'extra ==' not in line)
