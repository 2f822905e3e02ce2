package lazyscan.tests;

import java.io.File;
import java.io.IOException;
import java.net.URI;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FSDataOutputStream;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;
import org.apache.hadoop.util.Progressable;

/**
 * A read-only Hadoop file system for an object-store scheme ({@code s3a://bucket/key}) whose
 * objects are the files {@code <lazyscan.test.bucketFolder>/bucket/key}: Spark lists and reads
 * the same bytes the tests upload to their S3 server, with no S3 connector on the class path.
 */
public class LocalBucketFileSystem extends FileSystem {
  private URI uri;
  private String root;
  private RawLocalFileSystem local;

  @Override
  public void initialize(URI name, Configuration conf) throws IOException {
    super.initialize(name, conf);
    setConf(conf);
    String folder = conf.get("lazyscan.test.bucketFolder");
    if (folder == null) {
      throw new IOException("lazyscan.test.bucketFolder is not set");
    }
    uri = URI.create(name.getScheme() + "://" + name.getAuthority());
    root = new File(folder, name.getAuthority()).getAbsolutePath();
    local = new RawLocalFileSystem();
    local.initialize(URI.create("file:///"), conf);
  }

  @Override
  public URI getUri() {
    return uri;
  }

  private Path toLocal(Path p) {
    String path = p.toUri().getPath();
    return new Path("file://" + root + (path.isEmpty() ? "/" : path));
  }

  private FileStatus toRemote(FileStatus s) {
    String path = s.getPath().toUri().getPath().substring(root.length());
    Path remote = new Path(uri.toString() + (path.isEmpty() ? "/" : path));
    return new FileStatus(s.getLen(), s.isDirectory(), 1, s.getBlockSize(), s.getModificationTime(), remote);
  }

  @Override
  public FSDataInputStream open(Path f, int bufferSize) throws IOException {
    return local.open(toLocal(f), bufferSize);
  }

  @Override
  public FileStatus[] listStatus(Path f) throws IOException {
    FileStatus[] found = local.listStatus(toLocal(f));
    FileStatus[] out = new FileStatus[found.length];
    for (int i = 0; i < found.length; i++) {
      out[i] = toRemote(found[i]);
    }
    return out;
  }

  @Override
  public FileStatus getFileStatus(Path f) throws IOException {
    return toRemote(local.getFileStatus(toLocal(f)));
  }

  @Override
  public Path getWorkingDirectory() {
    return new Path(uri.toString() + "/");
  }

  @Override
  public void setWorkingDirectory(Path dir) {}

  @Override
  public boolean mkdirs(Path f, FsPermission permission) throws IOException {
    return local.mkdirs(toLocal(f), permission);
  }

  @Override
  public FSDataOutputStream create(Path f, FsPermission permission, boolean overwrite, int bufferSize,
      short replication, long blockSize, Progressable progress) throws IOException {
    throw new IOException("read-only: " + f);
  }

  @Override
  public FSDataOutputStream append(Path f, int bufferSize, Progressable progress) throws IOException {
    throw new IOException("read-only: " + f);
  }

  @Override
  public boolean rename(Path src, Path dst) throws IOException {
    throw new IOException("read-only: " + src);
  }

  @Override
  public boolean delete(Path f, boolean recursive) throws IOException {
    throw new IOException("read-only: " + f);
  }
}
