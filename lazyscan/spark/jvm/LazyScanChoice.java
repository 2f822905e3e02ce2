package lazyscan.spark.jvm;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.execution.datasources.FileIndex;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.PartitioningAwareFileIndex;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Whether lazyscan or Spark's reader reads a scan the rule could take over, by the cost model of
 * {@code lazyscan.spark.read} (Python, {@code lazyscan/spark/decision.py}).
 *
 * <p>The model is asked with the lazyscan read's options and the session's cores, on one of two
 * routes. On a classic session, {@code lazyscan.spark.enable} registers the model of the
 * driver's Python process ({@link #register}), which the JVM calls back through Py4J's callback
 * server. Otherwise (a Spark Connect server, whose JVM has no Python driver, or {@code
 * spark.lazyscan.choiceRoute=source}) through a planning call of the Python data source {@code
 * lazyscanChoice}: loading it with those options and no schema makes Spark call its {@code
 * schema()} in a Python worker, which answers in the metadata of its one field. Each decision
 * is kept per session, options and file listing (paths, sizes, modification times), so planning
 * a query twice asks once and decides the same. A decision that fails keeps Spark's reader
 * (Spark's filter stays above the scan either way, so a decision costs time only, never rows)
 * and is not kept.
 *
 * <p>Session settings: {@code spark.lazyscan.choice}, {@code auto} (default, the cost model) or
 * {@code lazyscan} (every scan the rule can take); {@code spark.lazyscan.choiceRoute}, {@code
 * auto} (default: the registered model where there is one) or {@code source} (the planning call
 * always).
 */
public final class LazyScanChoice {
  /** The session setting: {@code auto} or {@code lazyscan}. */
  public static final String CHOICE = "spark.lazyscan.choice";
  /** The session setting: {@code auto} or {@code source}. */
  public static final String ROUTE = "spark.lazyscan.choiceRoute";
  /** The name the Python choice source is registered under. */
  public static final String SOURCE = "lazyscanChoice";

  private static final String CORES_OPTION = "cores";
  private static final String QUERY_SCANS_OPTION = "queryscans";
  private static final int KEPT = 1024;
  /** Decisions by session, options and listing; the least recently used go first. */
  private static final Map<String, Verdict> DECIDED =
      new LinkedHashMap<String, Verdict>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Verdict> eldest) {
          return size() > KEPT;
        }
      };
  private static final AtomicLong ASKED = new AtomicLong();
  /** The driver's Python model per session: options as JSON in, the verdict as JSON out. */
  private static final Map<String, Function<String, String>> MODELS = new ConcurrentHashMap<>();

  private LazyScanChoice() {}

  /** One decision: lazyscan or not, and why (the model's text). */
  private static final class Verdict {
    final String session;
    final String scan;
    final boolean lazyscan;
    final String reason;
    /** Milliseconds the planning call took, and the model's share of them (in the worker). */
    final long askedMs;
    final long modelMs;
    final String route;

    Verdict(String session, String scan, Metadata m, long askedMs, String route) {
      this.session = session;
      this.scan = scan;
      this.lazyscan = m.getBoolean("useLazyscan");
      this.reason = m.getString("reason");
      this.askedMs = askedMs;
      this.modelMs = m.contains("seconds") ? Math.round(m.getDouble("seconds") * 1000) : -1;
      this.route = route;
    }

    @Override
    public String toString() {
      return scan + ": " + (lazyscan ? "lazyscan: " : "Spark's reader: ") + reason
          + " [decided in " + askedMs + " ms by the " + route + ", the model " + modelMs + " ms of them]";
    }
  }

  /**
   * Null when lazyscan should read the scan of {@code files} with the {@code lazyscan} data
   * source {@code options} (as the rule loads it: {@code path} or {@code paths}, or {@code table}
   * and {@code catalogTable}; {@code where}; {@code columns}; scan options); otherwise why Spark's
   * reader is kept, for the log and the plan.
   */
  public static String keepSparkReason(SparkSession session, HadoopFsRelation files, Map<String, String> options) {
    return keepSparkReason(session, files, options, 1);
  }

  /**
   * As {@link #keepSparkReason(SparkSession, HadoopFsRelation, Map)} for a scan of a query that
   * reads {@code queryScans} relations in all (its subqueries included): the model holds a scan
   * of a larger query to a larger saving.
   */
  public static String keepSparkReason(
      SparkSession session, HadoopFsRelation files, Map<String, String> options, int queryScans) {
    String mode = session.conf().get(CHOICE, "auto").trim().toLowerCase(Locale.ROOT);
    if (mode.equals("lazyscan")) {
      return null;
    }
    if (!mode.equals("auto")) {
      return CHOICE + " is " + mode + " (auto or lazyscan)";
    }
    Map<String, String> asked = new TreeMap<>();
    for (Map.Entry<String, String> e : options.entrySet()) {
      asked.put(e.getKey().toLowerCase(Locale.ROOT), e.getValue());
    }
    asked.put(CORES_OPTION, Integer.toString(session.sparkContext().defaultParallelism()));
    asked.put(QUERY_SCANS_OPTION, Integer.toString(Math.max(1, queryScans)));
    String id = sessionId(session);
    Map<String, String> decisive = new TreeMap<>(asked);
    if (decisive.containsKey("where")) {
      decisive.put("where", withoutInferredNotNull(decisive.get("where")));
    }
    String key = id + "\n" + decisive + "\n" + listing(files.location());
    Verdict kept;
    synchronized (DECIDED) {
      kept = DECIDED.get(key);
    }
    if (kept == null) {
      String scan = (asked.containsKey("table") ? "table " + asked.get("table") : paths(asked))
          + " (where: " + asked.get("where") + ", columns: " + asked.get("columns") + ")";
      try {
        kept = ask(session, asked, id, scan);
      } catch (Exception e) {
        String reason = "lazyscan's cost model could not decide: " + firstLine(e);
        log().warn("lazyscan: Spark's reader is kept for " + scan + ": " + reason);
        return reason;
      }
      log().info("lazyscan: " + kept);
      synchronized (DECIDED) {
        DECIDED.put(key, kept);
      }
    }
    return kept.lazyscan ? null : kept.reason;
  }

  /** The decisions kept for {@code session}, oldest first: {@code <scan>: lazyscan: <reason>}
   * or {@code <scan>: Spark's reader: <reason>}. */
  public static String[] verdicts(SparkSession session) {
    List<String> out = new ArrayList<>();
    synchronized (DECIDED) {
      for (Verdict v : DECIDED.values()) {
        if (v.session.equals(sessionId(session))) {
          out.add(v.toString());
        }
      }
    }
    return out.toArray(new String[0]);
  }

  /**
   * Registers the cost model of the driver's Python process for {@code session}: it takes the
   * options as a JSON object and returns the verdict as one ({@code useLazyscan}, {@code reason},
   * {@code seconds}, or {@code error}).
   */
  public static void register(SparkSession session, Function<String, String> model) {
    MODELS.put(sessionId(session), model);
  }

  /** Forgets the model registered for {@code session}: the planning call answers instead. */
  public static void unregister(SparkSession session) {
    MODELS.remove(sessionId(session));
  }

  /** How many times this JVM has asked the cost model (decisions kept are not asked again). */
  public static long modelCalls() {
    return ASKED.get();
  }

  /** Forgets every decision kept for {@code session}. */
  public static void forget(SparkSession session) {
    synchronized (DECIDED) {
      DECIDED.values().removeIf(v -> v.session.equals(sessionId(session)));
    }
  }

  private static Verdict ask(SparkSession session, Map<String, String> options, String id, String scan) {
    ASKED.incrementAndGet();
    long started = System.nanoTime();
    String route = session.conf().get(ROUTE, "auto").trim().toLowerCase(Locale.ROOT);
    Function<String, String> model = route.equals("source") ? null : MODELS.get(id);
    Metadata m;
    if (model != null) {
      route = "driver's model";
      m = Metadata.fromJson(model.apply(json(options)));
    } else {
      route = SOURCE + " source";
      StructType schema = session.read().format(SOURCE).options(new HashMap<>(options)).load().schema();
      if (schema.fields().length != 1) {
        throw new IllegalStateException("the " + SOURCE + " data source gave " + schema.simpleString());
      }
      StructField field = schema.fields()[0];
      m = field.metadata();
    }
    if (m.contains("error")) {
      throw new IllegalStateException(m.getString("error"));
    }
    if (!m.contains("useLazyscan") || !m.contains("reason")) {
      throw new IllegalStateException("the " + SOURCE + " data source gave no verdict: " + m.json());
    }
    return new Verdict(id, scan, m, (System.nanoTime() - started) / 1_000_000, route);
  }

  /**
   * {@code where} (the rule's filter text: one conjunct, or conjuncts in parentheses joined by
   * {@code AND}) without the {@code IS NOT NULL} conjuncts on columns another conjunct names:
   * Spark infers those from the others between two passes of the optimizer, and they change no
   * decision, so both passes find one kept decision.
   */
  static String withoutInferredNotNull(String where) {
    List<String> parts = conjuncts(where);
    if (parts.size() < 2) {
      return where;
    }
    List<String> kept = new ArrayList<>();
    for (String part : parts) {
      java.util.regex.Matcher m = NOT_NULL.matcher(part);
      boolean inferred = false;
      if (m.matches()) {
        for (String other : parts) {
          inferred |= other != part && other.contains(m.group(1));
        }
      }
      if (!inferred) {
        kept.add(part);
      }
    }
    return kept.size() == 1 ? kept.get(0) : "(" + String.join(") AND (", kept) + ")";
  }

  private static final java.util.regex.Pattern NOT_NULL =
      java.util.regex.Pattern.compile("(`(?:[^`]|``)+`) IS NOT NULL");

  /** The parts of {@code (a) AND (b) AND ...} outside quotes and backquotes; {@code where}
   * itself when it is not of that form. */
  private static List<String> conjuncts(String where) {
    List<String> parts = new ArrayList<>();
    int depth = 0;
    int start = -1;
    boolean quoted = false;
    boolean named = false;
    for (int i = 0; i < where.length(); i++) {
      char c = where.charAt(i);
      if (quoted) {
        if (c == '\\') {
          i++;
        } else if (c == '\'') {
          quoted = false;
        }
      } else if (named) {
        named = c != '`';
      } else if (c == '\'') {
        quoted = true;
      } else if (c == '`') {
        named = true;
      } else if (c == '(' && depth++ == 0) {
        start = i + 1;
      } else if (c == ')' && --depth == 0) {
        parts.add(where.substring(start, i));
      }
    }
    // between the parts only " AND ": then they are the conjuncts
    boolean joined = !parts.isEmpty() && where.equals("(" + String.join(") AND (", parts) + ")");
    return joined ? parts : List.of(where);
  }

  /** A digest of the files the index lists (path, length, modification time), or of its root
   * paths and size where it lists none in memory (a catalog's index before pruning). */
  private static String listing(FileIndex index) {
    StringBuilder b = new StringBuilder();
    if (index instanceof PartitioningAwareFileIndex) {
      for (FileStatus s : CollectionConverters.asJava(((PartitioningAwareFileIndex) index).allFiles())) {
        b.append(s.getPath()).append('\t').append(s.getLen()).append('\t').append(s.getModificationTime()).append('\n');
      }
    } else {
      for (Path p : CollectionConverters.asJava(index.rootPaths())) {
        b.append(p).append('\n');
      }
      b.append(index.sizeInBytes());
    }
    try {
      byte[] digest = MessageDigest.getInstance("SHA-256").digest(b.toString().getBytes(StandardCharsets.UTF_8));
      StringBuilder hex = new StringBuilder();
      for (byte x : digest) {
        hex.append(String.format("%02x", x));
      }
      return hex.toString();
    } catch (NoSuchAlgorithmException e) {
      return b.toString();
    }
  }

  static String sessionId(SparkSession session) {
    if (session instanceof org.apache.spark.sql.classic.SparkSession) {
      return ((org.apache.spark.sql.classic.SparkSession) session).sessionUUID();
    }
    return session.getClass().getName() + "@" + Integer.toHexString(System.identityHashCode(session));
  }

  private static String paths(Map<String, String> options) {
    if (options.containsKey("path")) {
      return options.get("path");
    }
    return options.getOrDefault("paths", "?");
  }

  static String json(Map<String, String> options) {
    StringBuilder b = new StringBuilder("{");
    for (Map.Entry<String, String> e : options.entrySet()) {
      b.append(b.length() > 1 ? ", " : "");
      b.append(LazyScanRule.Json.string(e.getKey())).append(": ");
      b.append(LazyScanRule.Json.string(e.getValue()));
    }
    return b.append('}').toString();
  }

  /** The first line of the message; of a Python traceback, also its last line (the error). */
  static String firstLine(Throwable e) {
    String text = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage().trim();
    int newline = text.indexOf('\n');
    if (newline < 0) {
      return text;
    }
    String first = text.substring(0, newline).replace("Traceback (most recent call last):", "").trim();
    if (!text.contains("Traceback (most recent call last)")) {
      return first;
    }
    return first + " " + text.substring(text.lastIndexOf('\n') + 1).trim();
  }

  private static org.slf4j.Logger log() {
    return org.slf4j.LoggerFactory.getLogger(LazyScanChoice.class);
  }
}
