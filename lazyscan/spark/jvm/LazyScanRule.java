package lazyscan.spark.jvm;

import java.net.URI;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.DataFrameReader;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.catalog.CatalogTable;
import org.apache.spark.sql.catalyst.catalog.CatalogTablePartition;
import org.apache.spark.sql.catalyst.catalog.HiveTableRelation;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.InputFileBlockLength;
import org.apache.spark.sql.catalyst.expressions.InputFileBlockStart;
import org.apache.spark.sql.catalyst.expressions.InputFileName;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.FileFormat;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.orc.OrcFileFormat;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;
import scala.runtime.AbstractPartialFunction;

/**
 * Replaces a filtered scan of Spark's Parquet or ORC file source by the lazyscan Python data
 * source.
 *
 * <p>Matches {@code Filter} over a {@code LogicalRelation(HadoopFsRelation)} of Parquet or ORC
 * files (optionally with a {@code Project} between or above them): files read by path
 * ({@code spark.read.parquet(p)}, {@code spark.read.orc(p)}) and tables of the session catalog
 * ({@code spark.table}, SQL; {@code USING parquet / orc}, and Hive tables {@code STORED AS
 * PARQUET / ORC} that Spark converts to its file source, {@code
 * spark.sql.hive.convertMetastoreParquet / Orc}). In its place goes the relation of {@code
 * spark.read.format("lazyscan")} over the same files, with the filter's translatable conjuncts
 * as the {@code where} option and only the needed columns (schema and {@code columns} option). A
 * catalog table is passed as the {@code table} and {@code catalogTable} options (the Python
 * worker has no session to ask): the relation's schema, the table's location and the locations
 * of the partitions the catalog lists for the filter's conjuncts on partition columns alone (as
 * Spark's partition pruning asks it). The new relation's output is the old relation's
 * attributes (same names, types and expression ids), so the plan above it is unchanged; Spark's
 * {@code Filter} stays above and checks every row again. Before the lazyscan relation is planned,
 * {@link LazyScanChoice} asks the cost model of {@code lazyscan.spark.read} with the options it
 * would be loaded with; where the model expects Spark's reader to be faster, it is kept.
 *
 * <p>Opt-outs: the session setting {@code spark.lazyscan.enabled=false} (read at each
 * optimization, so it switches per query); the reader option {@code lazyscan=false} ({@code
 * spark.read.option("lazyscan", "false").parquet(p)}, or {@code OPTIONS (lazyscan 'false')} of
 * a table); the table property {@code lazyscan.enabled=false} ({@code TBLPROPERTIES
 * ('lazyscan.enabled'='false')}).
 *
 * <p>Left to Spark's reader besides: a filter with no translatable conjunct other than {@code IS
 * NOT NULL}, Hive tables read through their SerDe (not converted), files outside the local file
 * system (object stores: Hadoop's {@code fs.*} settings are not passed on yet; PySpark ships no
 * {@code s3a://} file system to test it with), bucketed or streaming relations, reader options
 * other than paths, {@code mergeSchema} and Hive's SerDe properties, scans whose {@code
 * _metadata} columns are needed, queries calling {@code input_file_name()} (or the block start /
 * length), sessions ignoring corrupt or missing files, and sessions where the {@code lazyscan}
 * data source is not registered ({@code lazyscan.spark.enable}). Each decision, taken or kept
 * with its reason, is logged at INFO on the driver ({@code lazyscan.spark.jvm.LazyScanRule}) and
 * kept per session: {@link #decisions(SparkSession)}. The files are Spark's: the root paths of
 * the relation (a table's location or partition folders), listed as Spark lists them (hidden
 * files skipped, a table's folder read as plain files).
 */
public final class LazyScanRule extends Rule<LogicalPlan> {
  /** The session setting that turns the rule off ({@code false}). */
  public static final String ENABLED = "spark.lazyscan.enabled";
  /** The reader option (and table option) that keeps Spark's reader for one read ({@code false}). */
  public static final String READER_OPTION = "lazyscan";
  /** The table property that keeps Spark's reader for a table ({@code false}). */
  public static final String TABLE_PROPERTY = "lazyscan.enabled";

  private static final String IGNORE_CORRUPT = "spark.sql.files.ignoreCorruptFiles";
  private static final String IGNORE_MISSING = "spark.sql.files.ignoreMissingFiles";
  private static final String BINARY_AS_STRING = "spark.sql.parquet.binaryAsString";

  /** Reader options that do not change what is read: paths, schema merging, Hive's SerDe
   * property and the write option Spark adds to a converted Hive table. */
  private static final Set<String> PLAIN_OPTIONS =
      Set.of("path", "paths", "mergeschema", "serialization.format", "partitionoverwritemode", READER_OPTION);

  private static final String NO_FILTER = "no filter on the scan";

  private final SparkSession session;

  public LazyScanRule(SparkSession session) {
    this.session = session;
  }

  @Override
  public String ruleName() {
    return "lazyscan.spark.jvm.LazyScanRule";
  }

  /**
   * The latest decisions of the rule in {@code session}, oldest first: one line per scan, {@code
   * <scan>: lazyscan(where: ..., columns: ...)} where lazyscan reads it, {@code <scan>: Spark's
   * reader: <reason>} where Spark's reader was kept. A scan is its table's name or its paths.
   */
  public static String[] decisions(SparkSession session) {
    return Decisions.of(session);
  }

  /** Forgets the decisions kept for {@code session}. */
  public static void clearDecisions(SparkSession session) {
    Decisions.clear(session);
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (!isTrue(ENABLED, "true")) {
      return plan; // switched off: no decisions to report
    }
    String everyScan = null;
    if (isTrue(IGNORE_CORRUPT, "false") || isTrue(IGNORE_MISSING, "false")) {
      everyScan = "the session ignores corrupt or missing files (" + IGNORE_CORRUPT + ", " + IGNORE_MISSING + ")";
    } else if (readsInputFile(plan)) {
      // input_file_name() and friends are known to Spark's file scans only
      everyScan = "the query calls input_file_name() or input_file_block_start/length()";
    }
    return rewrite(plan, everyScan, new IdentityHashMap<>());
  }

  private boolean isTrue(String key, String fallback) {
    return "true".equalsIgnoreCase(conf().getConfString(key, fallback).trim());
  }

  private static boolean readsInputFile(LogicalPlan plan) {
    for (Expression e : CollectionConverters.asJava(plan.expressions())) {
      if (readsInputFile(e)) {
        return true;
      }
    }
    for (LogicalPlan child : CollectionConverters.asJava(plan.children())) {
      if (readsInputFile(child)) {
        return true;
      }
    }
    return false;
  }

  private static boolean readsInputFile(Expression e) {
    if (e instanceof InputFileName || e instanceof InputFileBlockStart || e instanceof InputFileBlockLength) {
      return true;
    }
    for (Expression child : CollectionConverters.asJava(e.children())) {
      if (readsInputFile(child)) {
        return true;
      }
    }
    return false;
  }

  /**
   * {@code plan} with the scans lazyscan takes over replaced; {@code everyScan}: the reason
   * every scan of the plan keeps Spark's reader (null: none); {@code reasons}: why the scans
   * tried so far kept Spark's reader.
   */
  private LogicalPlan rewrite(LogicalPlan plan, String everyScan, Map<LogicalPlan, String> reasons) {
    if (plan instanceof LogicalRelation && ((LogicalRelation) plan).relation() instanceof HadoopFsRelation) {
      LogicalRelation r = (LogicalRelation) plan;
      String reason = everyScan != null ? everyScan : reasons.get(r);
      if (reason == null) {
        String kept = keptBecause(r);
        reason = kept != null ? kept : NO_FILTER;
      }
      Decisions.record(session, describe(r), "Spark's reader: " + reason);
      return plan;
    }
    if (plan instanceof HiveTableRelation) {
      String table = ((HiveTableRelation) plan).tableMeta().identifier().unquotedString();
      Decisions.record(session, "table " + table, "Spark's reader: a Hive table read through its SerDe (not Parquet "
          + "or ORC, or spark.sql.hive.convertMetastoreParquet / convertMetastoreOrc is false)");
      return plan;
    }
    if (everyScan == null) {
      LogicalPlan replaced = replace(plan, reasons);
      if (replaced != null) {
        return replaced;
      }
    }
    return plan.mapChildren(
        new AbstractFunction1<LogicalPlan, LogicalPlan>() {
          @Override
          public LogicalPlan apply(LogicalPlan child) {
            return rewrite(child, everyScan, reasons);
          }
        });
  }

  /** {@code plan} with its file relation replaced, or null when it does not match (the reason
   * put in {@code reasons} under the relation). */
  private LogicalPlan replace(LogicalPlan plan, Map<LogicalPlan, String> reasons) {
    if (plan instanceof Project && ((Project) plan).child() instanceof Filter) {
      Project project = (Project) plan;
      Filter filter = (Filter) project.child();
      if (eligible(filter.child(), reasons)) {
        AttributeSet needed = project.references().$plus$plus(filter.condition().references());
        LogicalRelation relation = (LogicalRelation) filter.child();
        LogicalPlan scan = lazyscanRelation(relation, filter.condition(), needed, reasons);
        return scan == null ? null : project.withNewChildren(seq(List.of(filter.withNewChildren(seq(List.of(scan))))));
      }
    }
    if (plan instanceof Filter) {
      Filter filter = (Filter) plan;
      LogicalPlan child = filter.child();
      if (child instanceof Project && eligible(((Project) child).child(), reasons)) {
        Project project = (Project) child;
        if (!onlyAttributes(project)) {
          reasons.put(project.child(), "a computed column between the filter and the scan");
          return null;
        }
        LogicalRelation relation = (LogicalRelation) project.child();
        LogicalPlan scan = lazyscanRelation(relation, filter.condition(), project.references(), reasons);
        return scan == null ? null : filter.withNewChildren(seq(List.of(project.withNewChildren(seq(List.of(scan))))));
      }
      if (eligible(child, reasons)) {
        LogicalPlan scan = lazyscanRelation((LogicalRelation) child, filter.condition(), child.outputSet(), reasons);
        return scan == null ? null : filter.withNewChildren(seq(List.of(scan)));
      }
    }
    return null;
  }

  private static boolean onlyAttributes(Project p) {
    for (NamedExpression e : CollectionConverters.asJava(p.projectList())) {
      if (!(e instanceof Attribute)) {
        return false;
      }
    }
    return true;
  }

  /** Whether {@code plan} is a file relation lazyscan may read; if it is one it may not, why is
   * put in {@code reasons}. */
  private static boolean eligible(LogicalPlan plan, Map<LogicalPlan, String> reasons) {
    if (!(plan instanceof LogicalRelation) || !(((LogicalRelation) plan).relation() instanceof HadoopFsRelation)) {
      return false;
    }
    if (reasons.containsKey(plan)) {
      return false; // tried already in this pass
    }
    String reason = keptBecause((LogicalRelation) plan);
    if (reason != null) {
      reasons.put(plan, reason);
    }
    return reason == null;
  }

  /** Why Spark's reader keeps a file relation whatever the filter, or null. */
  private static String keptBecause(LogicalRelation r) {
    HadoopFsRelation fs = (HadoopFsRelation) r.relation();
    if (format(fs.fileFormat()) == null) {
      return "files of format " + fs.fileFormat() + " (lazyscan reads Parquet and ORC)";
    }
    if (r.isStreaming()) {
      return "a streaming read";
    }
    if (fs.bucketSpec().isDefined()) {
      return "a bucketed table (Spark plans its buckets)";
    }
    for (Map.Entry<String, String> option : CollectionConverters.asJava(fs.options()).entrySet()) {
      String key = option.getKey().toLowerCase(Locale.ROOT);
      if (key.equals(READER_OPTION) && "false".equalsIgnoreCase(option.getValue().trim())) {
        return "the reader option " + READER_OPTION + "=false";
      }
      if (!PLAIN_OPTIONS.contains(key)) {
        return "the reader option " + option.getKey() + " (lazyscan reads with Spark's defaults only)";
      }
    }
    if (r.catalogTable().isDefined()) {
      scala.Option<String> property = r.catalogTable().get().properties().get(TABLE_PROPERTY);
      if (property.isDefined() && "false".equalsIgnoreCase(property.get().trim())) {
        return "the table property " + TABLE_PROPERTY + "=false";
      }
    }
    return null;
  }

  /** The lazyscan name of a file format ({@code parquet}, {@code orc}), or null. */
  private static String format(FileFormat f) {
    if (f instanceof ParquetFileFormat) {
      return "parquet";
    }
    if (f instanceof OrcFileFormat) {
      return "orc";
    }
    return null;
  }

  private static String describe(LogicalRelation r) {
    if (r.catalogTable().isDefined()) {
      return "table " + r.catalogTable().get().identifier().unquotedString();
    }
    List<String> paths = new ArrayList<>();
    for (Path p : CollectionConverters.asJava(((HadoopFsRelation) r.relation()).location().rootPaths())) {
      if (paths.size() == 3) {
        paths.add("...");
        break;
      }
      paths.add(p.toString());
    }
    return String.join(", ", paths);
  }

  /**
   * The lazyscan relation reading {@code needed} of {@code relation} (in the relation's column
   * order) with {@code condition}'s translatable conjuncts as its filter; null (the reason in
   * {@code reasons}) when nothing translates or the data source cannot be loaded.
   */
  private LogicalPlan lazyscanRelation(
      LogicalRelation relation, Expression condition, AttributeSet needed, Map<LogicalPlan, String> reasons) {
    Map<ExprId, AttributeReference> byId = new HashMap<>();
    for (AttributeReference a : CollectionConverters.asJava(relation.output())) {
      byId.put(a.exprId(), a);
    }
    String where = FilterText.conjuncts(condition, byId);
    if (where == null) {
      reasons.put(relation, "no conjunct of the filter translates to lazyscan (only IS NOT NULL, or none)");
      return null;
    }
    HadoopFsRelation fs = (HadoopFsRelation) relation.relation();
    List<AttributeReference> columns = new ArrayList<>();
    List<StructField> fields = new ArrayList<>();
    for (AttributeReference a : CollectionConverters.asJava(relation.output())) {
      if (needed.contains(a)) {
        if (fs.schema().getFieldIndex(a.name()).isEmpty()) {
          reasons.put(relation, "the query reads the _metadata column, which Spark's file scan fills");
          return null;
        }
        columns.add(a);
        fields.add(new StructField(a.name(), a.dataType(), true, a.metadata()));
      }
    }
    if (columns.isEmpty()) {
      // count(*) needs no column; the relation still needs one to carry rows
      AttributeReference first = CollectionConverters.asJava(relation.output()).get(0);
      columns.add(first);
      fields.add(new StructField(first.name(), first.dataType(), true, first.metadata()));
    }
    String described = describe(relation);
    try {
      Map<String, String> options = new java.util.LinkedHashMap<>();
      options.put("where", where);
      options.put("columns", Json.names(columns));
      options.put("pushFilters", "false");
      // the files Spark's reader would read: a table's folder too, as plain files
      options.put("rawFiles", "true");
      options.put("binaryAsString", Boolean.toString(isTrue(BINARY_AS_STRING, "false")));
      if (relation.catalogTable().isDefined()) {
        CatalogTable table = relation.catalogTable().get();
        String json = tableJson(table, fs, condition, relation.output());
        if (json == null) {
          reasons.put(relation, "the table's files are outside the local file system");
          return null;
        }
        options.put("table", table.identifier().unquotedString());
        options.put("catalogTable", json);
      } else {
        List<String> paths = new ArrayList<>();
        for (Path p : CollectionConverters.asJava(fs.location().rootPaths())) {
          if (!"file".equals(p.toUri().getScheme())) {
            reasons.put(relation, "files outside the local file system (" + p.toUri().getScheme() + "://)");
            return null;
          }
          paths.add(p.toString());
        }
        // as DataFrameReader.load(paths) passes them: one as path, more as a JSON array
        if (paths.size() == 1) {
          options.put("path", paths.get(0));
        } else {
          List<String> quoted = new ArrayList<>();
          for (String p : paths) {
            quoted.add(Json.string(p));
          }
          options.put("paths", "[" + String.join(",", quoted) + "]");
        }
      }
      // the cost model of lazyscan.spark.read (asked before the lazyscan relation is planned)
      String choice = LazyScanChoice.keepSparkReason(session, fs, options);
      if (choice != null) {
        reasons.put(relation, choice);
        return null;
      }
      DataFrameReader reader =
          session.read().format("lazyscan").schema(new StructType(fields.toArray(new StructField[0]))).options(options);
      Dataset<Row> df = reader.load();
      LogicalPlan analyzed = df.queryExecution().analyzed();
      if (!(analyzed instanceof DataSourceV2Relation)) {
        warn("lazyscan: the lazyscan data source gave " + analyzed.nodeName() + "; Spark's reader is kept");
        reasons.put(relation, "the lazyscan data source gave " + analyzed.nodeName());
        return null;
      }
      DataSourceV2Relation v2 = (DataSourceV2Relation) analyzed;
      if (v2.output().size() != columns.size()) {
        reasons.put(relation, "the lazyscan data source gave other columns than asked");
        return null;
      }
      List<String> names = new ArrayList<>();
      for (AttributeReference a : columns) {
        names.add(a.name());
      }
      org.apache.spark.sql.connector.catalog.Table named = LazyScanTable.wrap(v2.table(), where, String.join(", ", names));
      Decisions.record(session, described, named.name());
      return v2.copy(named, seq(columns), v2.catalog(), v2.identifier(), v2.options(), v2.timeTravelSpec());
    } catch (Exception e) {
      warn("lazyscan: Spark's reader is kept for " + described + ": " + e);
      reasons.put(relation, "the lazyscan data source failed: " + e);
      return null;
    }
  }

  /**
   * The {@code catalogTable} option of a table: its name, format, location, the relation's
   * schema (partition columns last), partition columns and, where the catalog tracks them, the
   * partitions its pruning by {@code condition} leaves; null when a location is not local.
   */
  private String tableJson(CatalogTable table, HadoopFsRelation fs, Expression condition, Seq<AttributeReference> output) {
    String location = localPath(table.location());
    if (location == null) {
      return null;
    }
    List<String> partitionColumns = List.of(fs.partitionSchema().fieldNames());
    String partitions = "null";
    if (!partitionColumns.isEmpty() && table.tracksPartitionsInCatalog()) {
      StringBuilder b = new StringBuilder("[");
      for (CatalogTablePartition p : CollectionConverters.asJava(prunedPartitions(table, condition, output))) {
        String folder = localPath(p.location());
        if (folder == null) {
          return null;
        }
        Map<String, String> spec = new HashMap<>();
        for (Map.Entry<String, String> e : CollectionConverters.asJava(p.spec()).entrySet()) {
          spec.put(e.getKey().toLowerCase(Locale.ROOT), e.getValue());
        }
        List<String> values = new ArrayList<>();
        for (String c : partitionColumns) {
          values.add(Json.string(spec.get(c.toLowerCase(Locale.ROOT))));
        }
        b.append(b.length() > 1 ? ", " : "").append("[[").append(String.join(", ", values)).append("], ");
        b.append(Json.string(folder)).append(']');
      }
      partitions = b.append(']').toString();
    }
    List<String> quoted = new ArrayList<>();
    for (String c : partitionColumns) {
      quoted.add(Json.string(c));
    }
    return "{\"name\": " + Json.string(table.identifier().unquotedString())
        + ", \"format\": " + Json.string(format(fs.fileFormat()))
        + ", \"location\": " + Json.string(location)
        + ", \"schema\": " + fs.schema().json()
        + ", \"partitionColumns\": [" + String.join(", ", quoted) + "]"
        + ", \"partitions\": " + partitions + "}";
  }

  /** The partitions of {@code table} the catalog lists for the conjuncts of {@code condition}
   * on partition columns alone (all of them when there are none), as Spark's partition pruning
   * asks the catalog. */
  private Seq<CatalogTablePartition> prunedPartitions(CatalogTable table, Expression condition, Seq<AttributeReference> output) {
    Map<String, String> partitionNames = new HashMap<>();
    for (String name : table.partitionSchema().fieldNames()) {
      partitionNames.put(name.toLowerCase(Locale.ROOT), name);
    }
    Map<ExprId, String> partitionAttributes = new HashMap<>();
    for (AttributeReference a : CollectionConverters.asJava(output)) {
      String name = partitionNames.get(a.name().toLowerCase(Locale.ROOT));
      if (name != null) {
        partitionAttributes.put(a.exprId(), name);
      }
    }
    List<Expression> filters = new ArrayList<>();
    for (Expression e : FilterText.splitAnd(condition)) {
      if (!e.deterministic() || SubqueryExpression.hasSubquery(e) || e.references().isEmpty()) {
        continue;
      }
      boolean onPartitions = true;
      for (Attribute a : CollectionConverters.asJava(e.references().toSeq())) {
        onPartitions &= partitionAttributes.containsKey(a.exprId());
      }
      if (onPartitions) {
        // the catalog matches the columns by their exact names
        filters.add(e.transform(new AbstractPartialFunction<Expression, Expression>() {
          @Override
          public boolean isDefinedAt(Expression x) {
            return x instanceof AttributeReference && partitionAttributes.containsKey(((AttributeReference) x).exprId());
          }

          @Override
          public Expression apply(Expression x) {
            AttributeReference a = (AttributeReference) x;
            return a.withName(partitionAttributes.get(a.exprId()));
          }
        }));
      }
    }
    return session.sessionState().catalog().listPartitionsByFilter(table.identifier(), seq(filters));
  }

  /** The local path of a location URI, or null when it is not on the local file system. */
  private static String localPath(URI uri) {
    if (uri.getScheme() != null && !"file".equals(uri.getScheme())) {
      return null;
    }
    return uri.getPath();
  }

  private static void warn(String message) {
    org.slf4j.LoggerFactory.getLogger(LazyScanRule.class).warn(message);
  }

  static <T> Seq<T> seq(List<T> items) {
    return CollectionConverters.asScala(items).toSeq();
  }

  /** The latest decisions per session (a bounded number, the newest last). */
  static final class Decisions {
    private static final int KEPT = 64;
    private static final Map<SparkSession, java.util.LinkedHashMap<String, String>> BY_SESSION =
        new java.util.WeakHashMap<>();

    private Decisions() {}

    static synchronized void record(SparkSession session, String scan, String decision) {
      java.util.LinkedHashMap<String, String> latest = BY_SESSION.computeIfAbsent(session, s -> new java.util.LinkedHashMap<>());
      String before = latest.remove(scan);
      latest.put(scan, decision);
      if (latest.size() > KEPT) {
        latest.remove(latest.keySet().iterator().next());
      }
      if (!decision.equals(before)) {
        org.slf4j.LoggerFactory.getLogger(LazyScanRule.class).info("lazyscan: {}: {}", scan, decision);
      }
    }

    static synchronized String[] of(SparkSession session) {
      java.util.LinkedHashMap<String, String> latest = BY_SESSION.get(session);
      if (latest == null) {
        return new String[0];
      }
      List<String> out = new ArrayList<>();
      for (Map.Entry<String, String> e : latest.entrySet()) {
        out.add(e.getKey() + ": " + e.getValue());
      }
      return out.toArray(new String[0]);
    }

    static synchronized void clear(SparkSession session) {
      BY_SESSION.remove(session);
    }
  }

  /** JSON text of option values. */
  static final class Json {
    private Json() {}

    static String string(String s) {
      if (s == null) {
        return "null";
      }
      StringBuilder b = new StringBuilder("\"");
      for (char c : s.toCharArray()) {
        if (c == '"' || c == '\\') {
          b.append('\\').append(c);
        } else if (c < 0x20) {
          b.append(String.format("\\u%04x", (int) c));
        } else {
          b.append(c);
        }
      }
      return b.append('"').toString();
    }

    static String names(List<AttributeReference> columns) {
      List<String> names = new ArrayList<>();
      for (AttributeReference a : columns) {
        names.add(string(a.name()));
      }
      return "[" + String.join(", ", names) + "]";
    }
  }
}
