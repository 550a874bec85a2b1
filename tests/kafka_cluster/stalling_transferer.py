"""A slow remote store for ``LocalTieredStorage``: its ``transferer.class`` hook, compiled here with ``javac``.

``LocalTieredStorage`` copies every file of a segment through a ``Transferer`` (Kafka's own hook to simulate a
failing store). This one copies like the default, except that while the file named by ``$KLGC_STALL_MARKER`` exists
it writes only the first half of a ``.log`` of a partition folder starting with ``$KLGC_STALL_TOPIC-`` and then
waits for the marker to go: an upload in flight, for as long as the test wants. A broker killed then has published
``COPY_SEGMENT_STARTED`` and never anything after it, exactly as when a real upload is cut by a crash.

The class is compiled once per source text into ``.cache/kafka/<version>-tiered-test/transferer-<hash>/``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from jars import CACHE, JarsUnavailable

CLASS_NAME = "logdirgc.test.StallingTransferer"
MARKER_ENV, TOPIC_ENV = "KLGC_STALL_MARKER", "KLGC_STALL_TOPIC"  # spelled the same in SOURCE

SOURCE = """package logdirgc.test;

import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;

import org.apache.kafka.server.log.remote.storage.Transferer;

/** Copies as LocalTieredStorage's default transferer; stalls a chosen topic's segment uploads midway. */
public final class StallingTransferer implements Transferer {
    private static Path marker() {
        String name = System.getenv("KLGC_STALL_MARKER");
        return name == null ? null : Path.of(name);
    }

    private static boolean stalls(File to) {
        Path marker = marker();
        String topic = System.getenv("KLGC_STALL_TOPIC");
        return marker != null && topic != null && Files.exists(marker) && to.getName().endsWith(".log")
            && to.getParentFile().getName().startsWith(topic + "-");
    }

    @Override
    public void transfer(File from, File to) throws IOException {
        if (!from.exists()) {
            return;
        }
        if (stalls(to)) {
            byte[] data = Files.readAllBytes(from.toPath());
            Files.write(to.toPath(), Arrays.copyOf(data, data.length / 2));
            while (Files.exists(marker())) {
                try {
                    Thread.sleep(200);
                } catch (InterruptedException e) {
                    throw new InterruptedIOException("stalled upload interrupted");
                }
            }
            Files.delete(to.toPath());
        }
        Files.copy(from.toPath(), to.toPath());
    }

    @Override
    public void transfer(ByteBuffer from, File to) throws IOException {
        if (from != null && from.hasRemaining()) {
            try (FileOutputStream out = new FileOutputStream(to, false); FileChannel channel = out.getChannel()) {
                channel.write(from);
            }
        }
    }
}
"""


def compile_transferer(version: str, test_lib: Path) -> Path:
    """The directory of the compiled class (cached by source hash).

    Raises:
        JarsUnavailable: no ``javac``, or the source does not compile against Kafka ``version``'s test jar.
    """
    digest = hashlib.sha256(SOURCE.encode()).hexdigest()[:12]
    out = CACHE / f"{version}-tiered-test" / f"transferer-{digest}"
    target = out / (CLASS_NAME.replace(".", "/") + ".class")
    if target.exists():
        return out
    javac = shutil.which("javac")
    if javac is None:
        raise JarsUnavailable("javac not on PATH")
    src = out / "src" / (CLASS_NAME.replace(".", "/") + ".java")
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(SOURCE)
    jars = [str(p) for p in sorted(test_lib.glob("kafka-storage-*-test.jar"))]
    cmd = [javac, "-cp", os.pathsep.join(jars), "-d", str(out), str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise JarsUnavailable(f"javac failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return out
