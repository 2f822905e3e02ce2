package lazyscan.spark.jvm;

import java.io.IOException;
import java.net.URI;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import org.apache.hadoop.conf.Configuration;

/**
 * The {@code fs.*} options of the lazyscan data source for files Spark reads through Hadoop.
 *
 * <p>Local files need none. {@code s3a://} files get the settings of Hadoop's S3A connector that
 * say where and as whom to read, so that lazyscan's tasks read what Spark's reader would: for
 * bucket {@code b}, {@code fs.s3a.bucket.b.<key>} where set, else {@code fs.s3a.<key>}:
 *
 * <ul>
 *   <li>{@code endpoint}: {@code fs.endpoint_override} and {@code fs.scheme} (from the endpoint's
 *       {@code http://} or {@code https://}, else {@code connection.ssl.enabled}, default on);
 *       with it, {@code path.style.access} (default off) becomes {@code
 *       fs.force_virtual_addressing}, its opposite;
 *   <li>{@code endpoint.region}: {@code fs.region};
 *   <li>{@code access.key}, {@code secret.key}, {@code session.token} (also from Hadoop's
 *       credential providers): {@code fs.access_key}, {@code fs.secret_key}, {@code
 *       fs.session_token};
 *   <li>an anonymous {@code aws.credentials.provider}: {@code fs.anonymous}.
 * </ul>
 *
 * <p>Unset, pyarrow's S3 file system takes the AWS chain (environment, profile, instance role),
 * as Hadoop's default provider list does. {@code s3://} and {@code s3n://} files get no options
 * (read as {@code s3://} with the AWS chain). Files on other file systems keep Spark's reader.
 */
final class ObjectStores {
  private ObjectStores() {}

  /** The options for files under {@code roots}, or the reason lazyscan cannot read them. */
  static final class Access {
    final Map<String, String> options;
    final String reason;

    private Access(Map<String, String> options, String reason) {
      this.options = options;
      this.reason = reason;
    }
  }

  /** The schemes of S3 that lazyscan reads (as {@code s3://}). */
  static final Set<String> S3 = Set.of("s3", "s3a", "s3n");

  /** {@code uri}'s scheme in lower case; {@code file} when it has none. */
  static String scheme(URI uri) {
    return uri.getScheme() == null ? "file" : uri.getScheme().toLowerCase(Locale.ROOT);
  }

  /** The {@code fs.*} options for reading the files under {@code roots} with the settings of
   * {@code conf} (made only for files on S3A), or the reason Spark's reader is kept. */
  static Access of(Supplier<Configuration> conf, List<URI> roots) {
    Map<String, String> chosen = null;
    URI chosenRoot = null;
    for (URI root : roots) {
      String scheme = scheme(root);
      if (!scheme.equals("file") && !S3.contains(scheme)) {
        return new Access(null, "files on " + scheme + ":// (lazyscan reads local files and S3 here)");
      }
      Map<String, String> options = Map.of();
      if (scheme.equals("s3a")) {
        try {
          options = s3a(conf.get(), root.getAuthority());
        } catch (IOException e) {
          return new Access(null, "Hadoop's S3A credentials for " + root + " could not be read: " + e.getMessage());
        }
      }
      if (chosen == null) {
        chosen = options;
        chosenRoot = root;
      } else if (!chosen.equals(options) || scheme(chosenRoot).equals("file") != scheme.equals("file")) {
        return new Access(null, "files in places read with different settings (" + chosenRoot + ", " + root + ")");
      }
    }
    return new Access(chosen == null ? Map.of() : chosen, null);
  }

  private static Map<String, String> s3a(Configuration conf, String bucket) throws IOException {
    Map<String, String> options = new LinkedHashMap<>();
    String endpoint = setting(conf, bucket, "endpoint");
    if (endpoint != null) {
      String lowered = endpoint.toLowerCase(Locale.ROOT);
      String scheme;
      if (lowered.startsWith("http://") || lowered.startsWith("https://")) {
        scheme = lowered.substring(0, lowered.indexOf(':'));
        endpoint = endpoint.substring(scheme.length() + 3);
      } else {
        String ssl = setting(conf, bucket, "connection.ssl.enabled");
        scheme = ssl == null || Boolean.parseBoolean(ssl) ? "https" : "http";
      }
      while (endpoint.endsWith("/")) {
        endpoint = endpoint.substring(0, endpoint.length() - 1);
      }
      options.put("fs.endpoint_override", endpoint);
      options.put("fs.scheme", scheme);
      String pathStyle = setting(conf, bucket, "path.style.access");
      options.put("fs.force_virtual_addressing", Boolean.toString(!Boolean.parseBoolean(pathStyle)));
    }
    String region = setting(conf, bucket, "endpoint.region");
    if (region != null) {
      options.put("fs.region", region);
    }
    String provider = setting(conf, bucket, "aws.credentials.provider");
    if (provider != null && provider.contains("Anonymous")) {
      options.put("fs.anonymous", "true");
      return options;
    }
    String[][] secrets = {
      {"access.key", "fs.access_key"}, {"secret.key", "fs.secret_key"}, {"session.token", "fs.session_token"},
    };
    for (String[] s : secrets) {
      String value = secret(conf, bucket, s[0]);
      if (value != null) {
        options.put(s[1], value);
      }
    }
    return options;
  }

  /** {@code fs.s3a.bucket.<bucket>.<key>} when set, else {@code fs.s3a.<key>}; null when
   * neither is set or both are blank. */
  private static String setting(Configuration conf, String bucket, String key) {
    String value = bucket == null ? null : conf.getTrimmed("fs.s3a.bucket." + bucket + "." + key);
    if (value == null || value.isEmpty()) {
      value = conf.getTrimmed("fs.s3a." + key);
    }
    return value == null || value.isEmpty() ? null : value;
  }

  /** A secret setting as {@link #setting}, also looked up in Hadoop's credential providers. */
  private static String secret(Configuration conf, String bucket, String key) throws IOException {
    char[] value = bucket == null ? null : conf.getPassword("fs.s3a.bucket." + bucket + "." + key);
    if (value == null || value.length == 0) {
      value = conf.getPassword("fs.s3a." + key);
    }
    return value == null || value.length == 0 ? null : new String(value).trim();
  }
}
