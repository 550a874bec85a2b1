// Holds Kafka's kind of lock on a file, the way LogManager does (FileChannel.tryLock), until stdin closes.
// Used by test_locks.py to prove the executor's fcntl.lockf conflicts with the JVM's lock.
import java.io.RandomAccessFile;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;

public class Locker {
    public static void main(String[] args) throws Exception {
        try (RandomAccessFile file = new RandomAccessFile(args[0], "rw");
             FileChannel channel = file.getChannel()) {
            FileLock lock = channel.tryLock();
            System.out.println(lock == null ? "BUSY" : "LOCKED");
            System.out.flush();
            while (System.in.read() != -1) {
                // wait for the test to close our stdin
            }
            if (lock != null) {
                lock.release();
            }
        }
    }
}
