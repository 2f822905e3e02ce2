package lazyscan.spark.jvm;

import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
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
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.Literal$;
import org.apache.spark.sql.catalyst.plans.Inner$;
import org.apache.spark.sql.catalyst.plans.LeftSemi$;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.Distinct;
import org.apache.spark.sql.catalyst.plans.logical.Join;
import org.apache.spark.sql.catalyst.plans.logical.GlobalLimit;
import org.apache.spark.sql.catalyst.plans.logical.LocalLimit;
import org.apache.spark.sql.execution.QueryExecution;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
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
import org.apache.spark.sql.catalyst.expressions.InSubquery;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.SubqueryExpression;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.trees.TreeNodeTag;
import org.apache.spark.sql.execution.datasources.FileFormat;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.orc.OrcFileFormat;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;
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
 * {@code Filter} stays above and checks every row again. In a query that reads one relation, on a
 * classic session, the same read goes in as {@code mapInArrow} tasks the driver's Python process
 * plans ({@link LazyScanTasks}), which starts no Python planning worker. Before the lazyscan relation is planned,
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
 * NOT NULL}, Hive tables read through their SerDe (not converted), files neither local nor on
 * S3 (S3A's settings become the scan's {@code fs.*} options: {@link ObjectStores}), bucketed or
 * streaming relations, reader options
 * other than paths, {@code mergeSchema} and Hive's SerDe properties, scans whose {@code
 * _metadata} columns are needed, queries calling {@code input_file_name()} (or the block start /
 * length), sessions ignoring corrupt or missing files, and sessions where the {@code lazyscan}
 * data source is not registered ({@code lazyscan.spark.enable}). Each decision, taken or kept
 * with its reason, is logged at INFO on the driver ({@code lazyscan.spark.jvm.LazyScanRule}) and
 * kept per session: {@link #decisions(SparkSession)}. The files are Spark's: the root paths of
 * the relation (a table's location or partition folders), listed as Spark lists them (hidden
 * files skipped, a table's folder read as plain files).
 *
 * <p>Joins. The rule runs in each operator-optimization batch; where a later batch leaves a
 * {@code Filter} over a lazyscan relation with translatable conjuncts its {@code where} lacks
 * (Spark's "Infer Filters" batch: {@code a.k = 5} from {@code a.k = b.k AND b.k = 5}), the
 * relation is planned again with them and the {@code IS NOT NULL} ones (same attributes and
 * columns, the cost model's decision kept); {@code IS NOT NULL} alone plans nothing again. In an inner join on {@code a = b} between
 * attributes, where one side is a filtered scan Spark expects small ({@code
 * spark.lazyscan.keyFilter.maxDimensionBytes}, by default {@code
 * spark.sql.autoBroadcastJoinThreshold}) and the other side's scan is larger, the small side's
 * distinct keys are collected while optimizing (one Spark job, at most {@code
 * spark.lazyscan.keyFilter.maxKeys}, 100,000 by default; more give no key filter) and passed to
 * the other scan as its {@code keyFilter.<column>} option, exact: the scan skips row groups,
 * pages and rows holding none of them; the join checks every row again. Off by default
 * ({@code spark.lazyscan.keyFilter.enabled=true} turns it on): the keys are collected by a Spark
 * job while the query is optimized (so {@code explain()} runs it too), and TPC-H Q17 at SF10
 * gained nothing from them (the cost model samples the scan with them). An uncorrelated {@code x IN
 * (SELECT k ...)} conjunct of a scan's filter gives its keys the same way (Spark makes it a left
 * semi join only after its V2 scan pushdown, too late for a new relation). Left alone: keys under an
 * aggregate, non-deterministic sides, partition columns. A partitioned file relation joined on a
 * partition column with a filtered side keeps Spark's reader: Spark's dynamic partition pruning
 * skips its partitions at run time, which the Python data source cannot (it takes no runtime
 * filters).
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

  /** The relations the query being optimized reads (the cost model asks more of a scan in a
   * larger query). */
  private static final ThreadLocal<Integer> QUERY_SCANS = ThreadLocal.withInitial(() -> 1);

  /** Why Spark's reader was kept, on a kept file relation and the Project / Filter chain above
   * it (read by {@link LazyScanExplain}). */
  static final TreeNodeTag<String> KEPT_READER = new TreeNodeTag<>("lazyscan.sparkReaderKept");

  /** The session setting that turns key filters from joins off ({@code false}). */
  public static final String KEY_FILTERS = "spark.lazyscan.keyFilter.enabled";
  /** The largest estimated size of a join's filtered side whose keys are collected for the
   * other side's scan (default: {@code spark.sql.autoBroadcastJoinThreshold}). */
  public static final String MAX_DIMENSION_BYTES = "spark.lazyscan.keyFilter.maxDimensionBytes";
  /** The most distinct keys collected for a key filter (more: no key filter). */
  public static final String MAX_KEYS = "spark.lazyscan.keyFilter.maxKeys";
  /** Default of {@link #MAX_KEYS}: lazyscan's limit of exact key sets ({@code EXACT_LIMIT}). */
  public static final int DEFAULT_MAX_KEYS = 100_000;
  /** The smallest scan (Spark's estimate) a key filter is collected for. */
  public static final String MIN_SCAN_BYTES = "spark.lazyscan.keyFilter.minScanBytes";
  public static final String DEFAULT_MIN_SCAN_BYTES = "128m";

  private static final String KEY_FILTER_PREFIX = "keyFilter.";
  private static final String DYNAMIC_PARTITION_PRUNING = "spark.sql.optimizer.dynamicPartitionPruning.enabled";
  private static final String PARTITION_PRUNING = "dynamic partition pruning: joined on its partition column ";

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
    // restored afterwards: collecting a key filter's keys optimizes another query on this thread
    Integer outer = QUERY_SCANS.get();
    QUERY_SCANS.set(Math.max(scans(plan), inSubquery() ? 2 : 1));
    try {
      return rewrite(plan, everyScan, new IdentityHashMap<>());
    } finally {
      QUERY_SCANS.set(outer);
    }
  }

  /**
   * Whether the plan being optimized is a subquery of a larger query: Spark's {@code
   * OptimizeSubqueries} runs the whole optimizer on each subquery's plan, before the operator
   * optimization of the query around it, so the rule sees the subquery alone.
   */
  private static boolean inSubquery() {
    for (StackTraceElement frame : Thread.currentThread().getStackTrace()) {
      if (frame.getClassName().startsWith("org.apache.spark.sql.catalyst.optimizer.Optimizer$OptimizeSubqueries")) {
        return true;
      }
    }
    return false;
  }

  /** The relations {@code plan} reads, in its subqueries too. */
  private static int scans(LogicalPlan plan) {
    if (plan instanceof LogicalRelation || plan instanceof HiveTableRelation || plan instanceof DataSourceV2Relation
        || plan instanceof org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation) {
      return 1;
    }
    int n = 0;
    for (LogicalPlan child : CollectionConverters.asJava(plan.children())) {
      n += scans(child);
    }
    for (LogicalPlan subquery : CollectionConverters.asJava(plan.subqueries())) {
      n += scans(subquery);
    }
    return n;
  }

  private boolean isTrue(String key, String fallback) {
    return isTrue(conf(), key, fallback);
  }

  /** Whether the session setting {@code key} (default {@code fallback}) is {@code true}. */
  static boolean isTrue(org.apache.spark.sql.internal.SQLConf conf, String key, String fallback) {
    return "true".equalsIgnoreCase(conf.getConfString(key, fallback).trim());
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
      r.setTagValue(KEPT_READER, reason);
      return plan;
    }
    if (plan instanceof HiveTableRelation) {
      String table = ((HiveTableRelation) plan).tableMeta().identifier().unquotedString();
      Decisions.record(session, "table " + table, "Spark's reader: a Hive table read through its SerDe (not Parquet "
          + "or ORC, or spark.sql.hive.convertMetastoreParquet / convertMetastoreOrc is false)");
      return plan;
    }
    if (everyScan == null) {
      LogicalPlan keyed = plan instanceof Filter ? withSubqueryKeys((Filter) plan, reasons) : null;
      if (keyed != null) {
        return keyed;
      }
      LogicalPlan replaced = replace(plan, reasons);
      if (replaced != null) {
        return replaced;
      }
      LogicalPlan pruned = plan instanceof Project || plan instanceof Aggregate ? pruned(plan) : null;
      if (pruned != null) {
        return pruned;
      }
      if (plan instanceof Join) {
        keepForPartitionPruning((Join) plan, reasons);
        LogicalPlan join = plan.mapChildren(
            new AbstractFunction1<LogicalPlan, LogicalPlan>() {
              @Override
              public LogicalPlan apply(LogicalPlan child) {
                return rewrite(child, null, reasons);
              }
            });
        return withKeyFilter((Join) join, reasons);
      }
    }
    LogicalPlan rewritten = plan.mapChildren(
        new AbstractFunction1<LogicalPlan, LogicalPlan>() {
          @Override
          public LogicalPlan apply(LogicalPlan child) {
            return rewrite(child, everyScan, reasons);
          }
        });
    // the reason also on the Project / Filter chain above a kept scan: Spark's partition pruning
    // of a catalog table puts a new relation under that chain, and the chain keeps its tags
    if (rewritten instanceof Filter || rewritten instanceof Project) {
      scala.Option<String> kept = rewritten.children().head().getTagValue(KEPT_READER);
      if (kept.isDefined()) {
        rewritten.setTagValue(KEPT_READER, kept.get());
      }
    }
    return rewritten;
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
    if (plan instanceof Filter && lazyscanLeaf(((Filter) plan).child()) != null) {
      return widened((Filter) plan);
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

  /**
   * {@code filter} (over a lazyscan relation the rule planned, attribute-only projections and
   * filters between) with the relation planned again when the filter has translatable conjuncts
   * its {@code where} lacks: those Spark infers after the pass that swapped the relation
   * (constants carried over an equi-join, with the {@code IS NOT NULL} of join keys); null when
   * nothing new but {@code IS NOT NULL} is.
   */
  private LogicalPlan widened(Filter filter) {
    DataSourceV2Relation scan = lazyscanLeaf(filter.child());
    LazyScanTable table = (LazyScanTable) scan.table();
    Map<ExprId, AttributeReference> byId = new HashMap<>();
    for (Attribute a : CollectionConverters.asJava(scan.output())) {
      byId.put(a.exprId(), (AttributeReference) a);
    }
    List<String> conjuncts = new ArrayList<>(table.conjuncts());
    boolean selective = false;
    for (String c : FilterText.translated(filter.condition(), byId)) {
      if (!conjuncts.contains(c)) {
        conjuncts.add(c);
        selective |= !FilterText.isNotNull(c);
      }
    }
    if (!selective) {
      return null; // IS NOT NULL alone removes too few rows to pay for planning the scan again
    }
    DataSourceV2Relation again = replanned(scan, conjuncts, Map.of());
    return again == null ? null : withLeaf(filter, again);
  }

  /**
   * {@code consumer} (a projection or an aggregate over filters and attribute-only projections
   * over a lazyscan relation the rule planned) with the relation planned again for the columns
   * it uses only; null when it uses them all. A relation planned inside a subquery before Spark
   * pruned its columns (a correlated filter over the whole table) outputs every column, and the
   * Python data source takes no column pruning from Spark.
   */
  private LogicalPlan pruned(LogicalPlan consumer) {
    LogicalPlan chain = consumer.children().apply(0);
    DataSourceV2Relation scan = lazyscanLeaf(chain);
    if (scan == null) {
      return null;
    }
    AttributeSet needed = consumer.references();
    for (LogicalPlan node = chain; node != scan; node = node.children().apply(0)) {
      needed = needed.$plus$plus(node.references());
    }
    List<AttributeReference> columns = new ArrayList<>();
    for (Attribute a : CollectionConverters.asJava(scan.output())) {
      if (needed.contains(a)) {
        columns.add((AttributeReference) a);
      }
    }
    if (columns.size() == scan.output().size()) {
      return null;
    }
    if (columns.isEmpty()) {
      columns.add((AttributeReference) scan.output().head()); // count(*) still needs the rows
    }
    LazyScanTable table = (LazyScanTable) scan.table();
    DataSourceV2Relation again = replanned(scan, table.conjuncts(), Map.of(), columns);
    return again == null ? null : consumer.withNewChildren(seq(List.of(withLeaf(chain, again))));
  }

  /** The leaf under {@code plan} through filters and attribute-only projections. */
  private static LogicalPlan leafOf(LogicalPlan plan) {
    return leafThroughGroups(plan, null);
  }

  /** The lazyscan relation the rule planned under {@code plan} (see {@link #leafOf}), or null. */
  private static DataSourceV2Relation lazyscanLeaf(LogicalPlan plan) {
    return asLazyscan(leafOf(plan));
  }

  private static DataSourceV2Relation asLazyscan(LogicalPlan leaf) {
    if (leaf instanceof DataSourceV2Relation && ((DataSourceV2Relation) leaf).table() instanceof LazyScanTable) {
      return (DataSourceV2Relation) leaf;
    }
    return null;
  }

  /**
   * The leaf under {@code plan} as {@link #leafOf} finds it, also through aggregates grouped by
   * {@code key}: a row whose key a join drops belongs to a group the join drops whole, so the
   * rows under such an aggregate may be filtered by the key as the aggregate's output is (no
   * key: through none).
   */
  private static LogicalPlan leafThroughGroups(LogicalPlan plan, AttributeReference key) {
    while (plan instanceof Filter || plan instanceof Project && onlyAttributes((Project) plan)
        || plan instanceof Aggregate && groupedBy((Aggregate) plan, key)) {
      plan = plan.children().apply(0);
    }
    return plan;
  }

  /** Whether {@code aggregate} groups by {@code key} and passes it on as it is. */
  private static boolean groupedBy(Aggregate aggregate, AttributeReference key) {
    return key != null && hasAttribute(aggregate.groupingExpressions(), key) && hasAttribute(aggregate.aggregateExpressions(), key);
  }

  private static boolean hasAttribute(Seq<?> expressions, AttributeReference key) {
    for (Object e : CollectionConverters.asJava(expressions)) {
      if (e instanceof AttributeReference && ((AttributeReference) e).exprId().equals(key.exprId())) {
        return true;
      }
    }
    return false;
  }

  /** {@code plan}, a chain of one-child nodes, with its leaf replaced by {@code leaf}. */
  private static LogicalPlan withLeaf(LogicalPlan plan, LogicalPlan leaf) {
    if (plan.children().isEmpty()) {
      return leaf;
    }
    return plan.withNewChildren(seq(List.of(withLeaf(plan.children().apply(0), leaf))));
  }

  /** The equi-join conditions of {@code join} between attributes: pairs (left, right). */
  private static List<AttributeReference[]> equiKeys(Join join) {
    List<AttributeReference[]> out = new ArrayList<>();
    if (join.condition().isEmpty()) {
      return out;
    }
    AttributeSet left = join.left().outputSet();
    AttributeSet right = join.right().outputSet();
    for (Expression e : FilterText.splitAnd(join.condition().get())) {
      if (!(e instanceof EqualTo)) {
        continue;
      }
      Expression a = ((EqualTo) e).left();
      Expression b = ((EqualTo) e).right();
      if (!(a instanceof AttributeReference) || !(b instanceof AttributeReference)) {
        continue;
      }
      if (left.contains((Attribute) a) && right.contains((Attribute) b)) {
        out.add(new AttributeReference[] {(AttributeReference) a, (AttributeReference) b});
      } else if (left.contains((Attribute) b) && right.contains((Attribute) a)) {
        out.add(new AttributeReference[] {(AttributeReference) b, (AttributeReference) a});
      }
    }
    return out;
  }

  private static boolean hasFilter(LogicalPlan plan) {
    if (plan instanceof Filter) {
      return true;
    }
    for (LogicalPlan child : CollectionConverters.asJava(plan.children())) {
      if (hasFilter(child)) {
        return true;
      }
    }
    return false;
  }

  /**
   * Keeps Spark's reader for a partitioned file relation joined on a partition column with a
   * filtered side: Spark's dynamic partition pruning skips its partitions at run time, which
   * the Python data source cannot (it gets no runtime filters), so lazyscan would read every
   * partition the static filters leave.
   */
  private void keepForPartitionPruning(Join join, Map<LogicalPlan, String> reasons) {
    if (!isTrue(DYNAMIC_PARTITION_PRUNING, "true")) {
      return;
    }
    for (AttributeReference[] keys : equiKeys(join)) {
      keepForPartitionPruning(join.left(), keys[0], join.right(), reasons);
      keepForPartitionPruning(join.right(), keys[1], join.left(), reasons);
    }
  }

  private static void keepForPartitionPruning(
      LogicalPlan side, AttributeReference key, LogicalPlan other, Map<LogicalPlan, String> reasons) {
    LogicalPlan leaf = leafOf(side);
    if (!(leaf instanceof LogicalRelation) || !(((LogicalRelation) leaf).relation() instanceof HadoopFsRelation)
        || !hasFilter(other) || reasons.containsKey(leaf)) {
      return;
    }
    HadoopFsRelation fs = (HadoopFsRelation) ((LogicalRelation) leaf).relation();
    for (Attribute a : CollectionConverters.asJava(leaf.output())) {
      if (a.exprId().equals(key.exprId()) && fs.partitionSchema().getFieldIndex(a.name()).isDefined()) {
        reasons.put(leaf, PARTITION_PRUNING + a.name() + " with a filtered side (Spark prunes its partitions at "
            + "run time; the lazyscan source gets no runtime filters)");
      }
    }
  }

  /**
   * {@code join} (inner or left semi) with a key filter on one of its equi-join keys for the
   * scan of one side (of at least {@code spark.lazyscan.keyFilter.minScanBytes}, also under
   * aggregates grouped by the key), the keys of the other side: a selectively filtered scan
   * Spark expects small (at most {@code spark.lazyscan.keyFilter.maxDimensionBytes}, by default
   * {@code spark.sql.autoBroadcastJoinThreshold}, and smaller than the scan), that side itself
   * or one under it ({@link #keySource}). Its distinct keys are collected now (one Spark job per
   * side and query, at most {@code spark.lazyscan.keyFilter.maxKeys}; more give no key filter)
   * and passed as the scan's {@code keyFilter.<column>} option. The join stays and checks every
   * row again. One key filter per call (the optimizer calls the rule again).
   */
  private LogicalPlan withKeyFilter(Join join, Map<LogicalPlan, String> reasons) {
    if (!isTrue(KEY_FILTERS, "true")) {
      return join;
    }
    boolean inner = join.joinType() == Inner$.MODULE$;
    if (!inner && join.joinType() != LeftSemi$.MODULE$) {
      return join;
    }
    for (AttributeReference[] keys : equiKeys(join)) {
      LogicalPlan left = keyFiltered(join.left(), keys[0], join.right(), keys[1], reasons);
      if (left != null) {
        return join.withNewChildren(seq(List.of(left, join.right())));
      }
      LogicalPlan right = inner ? keyFiltered(join.right(), keys[1], join.left(), keys[0], reasons) : null;
      if (right != null) {
        return join.withNewChildren(seq(List.of(join.left(), right)));
      }
    }
    return join;
  }

  /**
   * {@code filter} (over a file scan or a lazyscan relation) with a key filter from one of its
   * {@code x IN (SELECT k FROM ...)} conjuncts: the subquery's distinct keys, as a join's other
   * side gives them ({@link #keyFiltered}: a filtered scan Spark expects small, deterministic,
   * under the key cap). Spark rewrites such a conjunct into a left semi join only after its V2
   * scan pushdown, so it is met here, as the filter's conjunct; the conjunct stays and checks
   * every row. Null when none gives one (correlated subqueries, {@code NOT IN} and several
   * values never do).
   */
  private LogicalPlan withSubqueryKeys(Filter filter, Map<LogicalPlan, String> reasons) {
    if (!isTrue(KEY_FILTERS, "true")) {
      return null;
    }
    for (Expression c : FilterText.splitAnd(filter.condition())) {
      if (!(c instanceof InSubquery)) {
        continue;
      }
      InSubquery in = (InSubquery) c;
      LogicalPlan sub = in.query().plan();
      if (in.values().size() != 1 || !(in.values().head() instanceof AttributeReference)
          || !in.query().outerAttrs().isEmpty() || sub.output().size() != 1
          || !(sub.output().head() instanceof AttributeReference)) {
        continue;
      }
      LogicalPlan keyed = keyFiltered(
          filter, (AttributeReference) in.values().head(), sub, (AttributeReference) sub.output().head(), reasons);
      if (keyed != null) {
        return keyed;
      }
    }
    return null;
  }

  /** {@code fact} with its scan reading only rows whose {@code factKey} is among the keys of
   * {@code dimension}'s {@code dimensionKey}; null when not (see {@link #withKeyFilter}). */
  private LogicalPlan keyFiltered(LogicalPlan fact, AttributeReference factKey, LogicalPlan dimension,
      AttributeReference dimensionKey, Map<LogicalPlan, String> reasons) {
    if (!factKey.dataType().sameType(dimensionKey.dataType()) || KeySet.family(factKey.dataType()) == null) {
      return null;
    }
    if (!deterministic(fact)) {
      return null; // rows a random filter sees too
    }
    LogicalPlan leaf = leafThroughGroups(fact, factKey);
    DataSourceV2Relation scan = asLazyscan(leaf);
    LogicalRelation files = null;
    String column = null;
    long factSize;
    if (scan != null) {
      LazyScanTable table = (LazyScanTable) scan.table();
      column = nameOf(scan.output(), factKey);
      if (column == null || table.keys().containsKey(column) || contains(table.partitionColumns(), column)) {
        return null;
      }
      factSize = table.sizeInBytes();
    } else if (leaf instanceof LogicalRelation && ((LogicalRelation) leaf).relation() instanceof HadoopFsRelation) {
      files = (LogicalRelation) leaf;
      HadoopFsRelation fs = (HadoopFsRelation) files.relation();
      String reason = reasons.get(files);
      if (reason != null && reason.startsWith(PARTITION_PRUNING) || keptBecause(files) != null) {
        return null;
      }
      column = nameOf(files.output(), factKey);
      if (column == null || fs.partitionSchema().getFieldIndex(column).isDefined()
          || fs.schema().getFieldIndex(column).isEmpty()) {
        return null;
      }
      factSize = size(files);
    } else {
      return null;
    }
    if (factSize < minScanBytes()) {
      return null; // Spark's reader reads it in less time than collecting keys takes
    }
    KeySource source = keySource(dimension, dimensionKey, Math.min(maxDimensionBytes(), factSize - 1), 0);
    if (source == null) {
      return null;
    }
    String collected = source.plan.semanticHash() + ":" + source.key.exprId().id();
    if (!Attempts.first(collected + ":" + factKey.exprId().id())) {
      return null; // tried already for this query: no key filter, or the scan kept
    }
    int maxKeys = maxKeys();
    String scanName = scan != null ? describe(scan.options().asCaseSensitiveMap()) : describe(files);
    String decision = scanName + " key filter on " + column;
    Object known = Attempts.keys(collected);
    if (known == null) {
      // once per query: a join's other side often bounds several scans (Q9's parts: partsupp, lineitem)
      String side = sideName(source, maxKeys);
      known = side == null ? null : OverCap.reason(session, side);
      if (known == null) {
        try {
          KeySet got = collectKeys(source.plan, source.key, maxKeys);
          known = got != null ? got : "none: the other side has more than " + maxKeys + " distinct keys (" + MAX_KEYS + ")";
          if (got == null && side != null) {
            OverCap.remember(session, side, known + ", found by an earlier query of this session");
          }
        } catch (Exception e) {
          warn("lazyscan: no key filter on " + column + " of " + scanName + ": the keys could not be collected: " + e);
          known = "none: the keys could not be collected: " + e;
        }
      }
      Attempts.remember(collected, known);
    }
    if (!(known instanceof KeySet)) {
      Decisions.record(session, decision, (String) known);
      return null;
    }
    KeySet keys = (KeySet) known;
    Decisions.record(session, decision, keys.count + " keys");
    if (scan != null) {
      DataSourceV2Relation again = replanned(scan, ((LazyScanTable) scan.table()).conjuncts(), Map.of(column, keys));
      return again == null ? null : withLeaf(fact, again);
    }
    Expression condition = null;
    AttributeSet needed = fact.outputSet();
    for (LogicalPlan node = fact; node != leaf; node = node.children().apply(0)) {
      if (node instanceof Aggregate) {
        // what is above an aggregate reads its groups, not the scan's rows
        condition = null;
        needed = node.references();
        continue;
      }
      needed = needed.$plus$plus(node.references());
      if (node instanceof Filter) {
        Expression c = ((Filter) node).condition();
        condition = condition == null ? c : new And(condition, c);
      }
    }
    LogicalPlan swapped = lazyscanRelation(files, condition, needed, Map.of(column, keys), reasons);
    return swapped == null ? null : withLeaf(fact, swapped);
  }

  /**
   * What names {@code source}'s keys from one query to the next: its plan with attribute ids
   * normalized, its leaf's files (root paths and size) or lazyscan options, the key's place in
   * its output and the cap; null when its leaf is neither a file relation nor a lazyscan one.
   */
  private static String sideName(KeySource source, int maxKeys) {
    LogicalPlan leaf = scanLeaf(source.plan);
    String files;
    if (leaf instanceof LogicalRelation && ((LogicalRelation) leaf).relation() instanceof HadoopFsRelation) {
      org.apache.spark.sql.execution.datasources.FileIndex location =
          ((HadoopFsRelation) ((LogicalRelation) leaf).relation()).location();
      files = location.rootPaths() + " " + location.sizeInBytes();
    } else if (leaf instanceof DataSourceV2Relation && ((DataSourceV2Relation) leaf).table() instanceof LazyScanTable) {
      DataSourceV2Relation v2 = (DataSourceV2Relation) leaf;
      files = new java.util.TreeMap<>(v2.options().asCaseSensitiveMap()) + " " + ((LazyScanTable) v2.table()).sizeInBytes();
    } else {
      return null;
    }
    int place = source.plan.output().indexOf(source.key);
    return source.plan.canonicalized() + "\n" + files + "\nkey " + place + ", cap " + maxKeys;
  }

  /**
   * The sides found to have more distinct keys than the cap, per session (a bounded number):
   * a later query with the same side collects nothing. Only that is kept across queries: a
   * side remembered wrongly (its files rewritten in place, keeping their size) loses a key
   * filter, never a row; keys themselves are collected anew by each query.
   */
  static final class OverCap {
    private static final int KEPT = 64;
    private static final Map<SparkSession, java.util.LinkedHashMap<String, String>> BY_SESSION =
        new java.util.WeakHashMap<>();

    private OverCap() {}

    static synchronized String reason(SparkSession session, String side) {
      java.util.LinkedHashMap<String, String> kept = BY_SESSION.get(session);
      return kept == null ? null : kept.get(side);
    }

    static synchronized void remember(SparkSession session, String side, String reason) {
      java.util.LinkedHashMap<String, String> kept = BY_SESSION.computeIfAbsent(session, s -> new java.util.LinkedHashMap<>());
      kept.put(side, reason);
      if (kept.size() > KEPT) {
        kept.remove(kept.keySet().iterator().next());
      }
    }
  }

  /** A plan whose distinct {@code key} values include those of the dimension it was found in. */
  private static final class KeySource {
    final LogicalPlan plan;
    final AttributeReference key;

    KeySource(LogicalPlan plan, AttributeReference key) {
      this.plan = plan;
      this.key = key;
    }
  }

  /**
   * The smallest part of {@code dimension} that bounds its {@code key} values: {@code dimension}
   * itself when it is a filtered scan of at most {@code maxBytes} (Spark's estimate), else such
   * a scan found through filters, attribute-only projections, aggregates grouped by the key and
   * inner or left semi joins (to the side the key comes from, or to the other side's equi-join
   * partner: a join keeps only keys both sides have). Its keys may be more than the dimension's;
   * the join checks every row again. Null when there is none, or it is not deterministic (keys
   * collected apart from the join's run could differ).
   */
  private static KeySource keySource(LogicalPlan plan, AttributeReference key, long maxBytes, int depth) {
    long size = dimensionSize(plan);
    if (size >= 0) {
      return size <= maxBytes && selective(plan) && deterministic(plan) ? new KeySource(plan, key) : null;
    }
    if (depth > 16) {
      return null;
    }
    if (plan instanceof Filter || plan instanceof Project && hasAttribute(((Project) plan).projectList(), key)
        || plan instanceof Aggregate && groupedBy((Aggregate) plan, key)) {
      return keySource(plan.children().apply(0), key, maxBytes, depth + 1);
    }
    if (!(plan instanceof Join)) {
      return null;
    }
    Join join = (Join) plan;
    if (join.joinType() != Inner$.MODULE$ && join.joinType() != LeftSemi$.MODULE$) {
      return null;
    }
    for (LogicalPlan side : CollectionConverters.asJava(join.children())) {
      if (side.outputSet().contains(key)) {
        KeySource found = keySource(side, key, maxBytes, depth + 1);
        if (found != null) {
          return found;
        }
      }
    }
    for (AttributeReference[] keys : equiKeys(join)) {
      if (keys[0].exprId().equals(key.exprId())) {
        KeySource found = keySource(join.right(), keys[1], maxBytes, depth + 1);
        if (found != null) {
          return found;
        }
      } else if (keys[1].exprId().equals(key.exprId())) {
        KeySource found = keySource(join.left(), keys[0], maxBytes, depth + 1);
        if (found != null) {
          return found;
        }
      }
    }
    return null;
  }

  /** Whether a filter of {@code plan} (a filtered scan) has a conjunct other than {@code IS NOT
   * NULL}: the keys of a scan filtered by those alone are nearly all its keys. */
  private static boolean selective(LogicalPlan plan) {
    if (plan instanceof Filter) {
      for (Expression c : FilterText.splitAnd(((Filter) plan).condition())) {
        if (!(c instanceof IsNotNull)) {
          return true;
        }
      }
    }
    for (LogicalPlan child : CollectionConverters.asJava(plan.children())) {
      if (selective(child)) {
        return true;
      }
    }
    return false;
  }

  /** Whether every expression of {@code plan} and its children is deterministic. */
  private static boolean deterministic(LogicalPlan plan) {
    for (Expression e : CollectionConverters.asJava(plan.expressions())) {
      if (!e.deterministic()) {
        return false;
      }
    }
    for (LogicalPlan child : CollectionConverters.asJava(plan.children())) {
      if (!deterministic(child)) {
        return false;
      }
    }
    return true;
  }

  private static String nameOf(Seq<? extends Attribute> output, AttributeReference key) {
    for (Attribute a : CollectionConverters.asJava(output)) {
      if (a.exprId().equals(key.exprId())) {
        return a.name();
      }
    }
    return null;
  }

  private static boolean contains(List<String> names, String name) {
    for (String n : names) {
      if (n.equalsIgnoreCase(name)) {
        return true;
      }
    }
    return false;
  }

  private static long size(LogicalPlan plan) {
    scala.math.BigInt size = plan.stats().sizeInBytes();
    return size.isValidLong() ? size.toLong() : Long.MAX_VALUE;
  }

  /** Spark's size estimate of a filtered scan (filters and projections over a file relation or
   * a lazyscan relation the rule planned), or -1 when {@code plan} is not one. */
  private static long dimensionSize(LogicalPlan plan) {
    if (!hasFilter(plan)) {
      return -1;
    }
    LogicalPlan leaf = scanLeaf(plan);
    if (leaf instanceof DataSourceV2Relation && ((DataSourceV2Relation) leaf).table() instanceof LazyScanTable) {
      return ((LazyScanTable) ((DataSourceV2Relation) leaf).table()).sizeInBytes();
    }
    if (leaf instanceof LogicalRelation && ((LogicalRelation) leaf).relation() instanceof HadoopFsRelation) {
      return size(plan);
    }
    return -1;
  }

  /** The relation under {@code plan}'s filters and projections (a scan relation's own relation:
   * a subquery optimized on its own has had its pushdown done). */
  private static LogicalPlan scanLeaf(LogicalPlan plan) {
    LogicalPlan leaf = plan;
    while (leaf instanceof Filter || leaf instanceof Project) {
      leaf = leaf.children().apply(0);
    }
    return leaf instanceof DataSourceV2ScanRelation ? ((DataSourceV2ScanRelation) leaf).relation() : leaf;
  }

  private long maxDimensionBytes() {
    String set = conf().getConfString(MAX_DIMENSION_BYTES, "").trim();
    if (set.isEmpty()) {
      return conf().autoBroadcastJoinThreshold();
    }
    return org.apache.spark.network.util.JavaUtils.byteStringAsBytes(set);
  }

  private long minScanBytes() {
    String set = conf().getConfString(MIN_SCAN_BYTES, DEFAULT_MIN_SCAN_BYTES).trim();
    return org.apache.spark.network.util.JavaUtils.byteStringAsBytes(set);
  }

  private int maxKeys() {
    return Integer.parseInt(conf().getConfString(MAX_KEYS, Integer.toString(DEFAULT_MAX_KEYS)).trim());
  }

  /** The distinct non-NULL values of {@code key} in {@code dimension}'s rows (one Spark job);
   * null when there are more than {@code maxKeys}. */
  private KeySet collectKeys(LogicalPlan dimension, AttributeReference key, int maxKeys) {
    LogicalPlan distinct = new Distinct(new Project(seq(List.of(key)), new Filter(new IsNotNull(key), dimension)));
    Expression limit = Literal$.MODULE$.apply(maxKeys + 1);
    LogicalPlan plan = new GlobalLimit(limit, new LocalLimit(limit, distinct));
    QueryExecution execution = session.sessionState().executePlan(plan, session.sessionState().executePlan$default$2());
    InternalRow[] rows = (InternalRow[]) execution.executedPlan().executeCollect();
    if (rows.length > maxKeys) {
      return null;
    }
    return KeySet.of(rows, key.dataType());
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
    return describe(r.catalogTable().isDefined() ? r.catalogTable().get().identifier() : null,
        (HadoopFsRelation) r.relation());
  }

  /** A scan as the decisions name it: {@code table <name>}, or the first root paths of its files. */
  static String describe(TableIdentifier table, HadoopFsRelation relation) {
    if (table != null) {
      return "table " + table.unquotedString();
    }
    List<String> paths = new ArrayList<>();
    for (Path p : CollectionConverters.asJava(relation.location().rootPaths())) {
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
    return lazyscanRelation(relation, condition, needed, Map.of(), reasons);
  }

  /**
   * As above, with key filters ({@code keyFilter.<column>} options: file column to key set); a
   * scan with a key filter needs no other filter ({@code condition} may be null).
   */
  private LogicalPlan lazyscanRelation(LogicalRelation relation, Expression condition, AttributeSet needed,
      Map<String, KeySet> keyFilters, Map<LogicalPlan, String> reasons) {
    Map<ExprId, AttributeReference> byId = new HashMap<>();
    for (AttributeReference a : CollectionConverters.asJava(relation.output())) {
      byId.put(a.exprId(), a);
    }
    List<String> conjuncts = condition == null ? List.of() : FilterText.translated(condition, byId);
    boolean selective = false;
    for (String c : conjuncts) {
      selective |= !FilterText.isNotNull(c);
    }
    if (!selective && keyFilters.isEmpty()) {
      reasons.put(relation, "no conjunct of the filter translates to lazyscan (only IS NOT NULL, or none)");
      return null;
    }
    String where = FilterText.and(conjuncts);
    HadoopFsRelation fs = (HadoopFsRelation) relation.relation();
    List<AttributeReference> columns = new ArrayList<>();
    for (AttributeReference a : CollectionConverters.asJava(relation.output())) {
      if (needed.contains(a)) {
        if (fs.schema().getFieldIndex(a.name()).isEmpty()) {
          reasons.put(relation, "the query reads the _metadata column, which Spark's file scan fills");
          return null;
        }
        columns.add(a);
      }
    }
    if (columns.isEmpty()) {
      // count(*) needs no column; the relation still needs one to carry rows
      columns.add(CollectionConverters.asJava(relation.output()).get(0));
    }
    String described = describe(relation);
    try {
      Map<String, String> options = new java.util.LinkedHashMap<>();
      if (where != null) {
        options.put("where", where);
      }
      options.put("columns", Json.names(columns));
      options.put("pushFilters", "false");
      // the files Spark's reader would read: a table's folder too, as plain files
      options.put("rawFiles", "true");
      options.put("binaryAsString", Boolean.toString(isTrue(BINARY_AS_STRING, "false")));
      List<URI> roots = new ArrayList<>();
      for (Path p : CollectionConverters.asJava(fs.location().rootPaths())) {
        roots.add(p.toUri());
      }
      ObjectStores.Access access = ObjectStores.of(() -> session.sessionState().newHadoopConfWithOptions(fs.options()), roots);
      if (access.reason != null) {
        reasons.put(relation, access.reason);
        return null;
      }
      options.putAll(access.options);
      if (relation.catalogTable().isDefined()) {
        CatalogTable table = relation.catalogTable().get();
        String json = tableJson(table, fs, condition == null ? Literal$.MODULE$.TrueLiteral() : condition, relation.output());
        if (json == null) {
          reasons.put(relation, "the table's files are outside the local file system and S3");
          return null;
        }
        options.put("table", table.identifier().unquotedString());
        options.put("catalogTable", json);
      } else {
        List<String> paths = new ArrayList<>();
        for (Path p : CollectionConverters.asJava(fs.location().rootPaths())) {
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
      Map<String, Integer> keys = new HashMap<>();
      for (Map.Entry<String, KeySet> k : keyFilters.entrySet()) {
        options.put(KEY_FILTER_PREFIX + k.getKey(), k.getValue().text);
        keys.put(k.getKey(), k.getValue().count);
      }
      // the cost model of lazyscan.spark.read (asked before the lazyscan relation is planned)
      String choice = LazyScanChoice.keepSparkReason(session, fs, options, QUERY_SCANS.get());
      if (choice != null) {
        reasons.put(relation, choice);
        return null;
      }
      if (keyFilters.isEmpty() && QUERY_SCANS.get() == 1) {
        String name = LazyScanTable.nameOf("lazyscan", conjuncts, namesOf(columns), Map.of());
        LogicalPlan tasks = LazyScanTasks.plan(session, options, columns, name, described);
        if (tasks != null) {
          Decisions.record(session, described, name);
          return tasks;
        }
      }
      long size = columnsSize(relation, columns);
      List<String> partitionColumns = List.of(fs.partitionSchema().fieldNames());
      DataSourceV2Relation planned = planned(options, columns, conjuncts, keys, size, partitionColumns, described, null);
      if (planned == null) {
        reasons.put(relation, "the lazyscan data source gave another relation or other columns than asked");
      }
      return planned;
    } catch (Exception e) {
      warn("lazyscan: Spark's reader is kept for " + described + ": " + e);
      reasons.put(relation, "the lazyscan data source failed: " + e);
      return null;
    }
  }

  /** Spark's size estimate of {@code relation} read for {@code columns} only (as Spark scales
   * a projection's size by its row width). */
  private static long columnsSize(LogicalRelation relation, List<AttributeReference> columns) {
    double size = relation.stats().sizeInBytes().doubleValue();
    long all = rowWidth(CollectionConverters.asJava(relation.output()));
    return (long) Math.min(Long.MAX_VALUE, size * rowWidth(columns) / all);
  }

  /** A row's width as Spark estimates it for a projection: 8 bytes plus each type's default size. */
  private static long rowWidth(List<? extends Attribute> columns) {
    long width = 8;
    for (Attribute a : columns) {
      width += a.dataType().defaultSize();
    }
    return width;
  }

  /**
   * The relation of the lazyscan data source loaded with {@code options}, its output {@code
   * columns} (the attributes of the plan it goes into), named for its filter ({@code
   * conjuncts}) and key filters; null when the source gives another relation or other columns.
   */
  private DataSourceV2Relation planned(Map<String, String> options, List<AttributeReference> columns,
      List<String> conjuncts, Map<String, Integer> keys, long size, List<String> partitionColumns, String described,
      String replaces) {
    DataFrameReader reader = session.read().format("lazyscan").schema(schemaOf(columns)).options(options);
    Dataset<Row> df = reader.load();
    LogicalPlan analyzed = df.queryExecution().analyzed();
    if (!(analyzed instanceof DataSourceV2Relation)) {
      warn("lazyscan: the lazyscan data source gave " + analyzed.nodeName() + "; Spark's reader is kept");
      return null;
    }
    DataSourceV2Relation v2 = (DataSourceV2Relation) analyzed;
    if (v2.output().size() != columns.size()) {
      return null;
    }
    org.apache.spark.sql.connector.catalog.Table named =
        LazyScanTable.wrap(v2.table(), conjuncts, namesOf(columns), keys, size, partitionColumns, described);
    Decisions.record(session, described, named.name(), replaces);
    return v2.copy(named, seq(columns), v2.catalog(), v2.identifier(), v2.options(), v2.timeTravelSpec());
  }

  /** The schema a lazyscan read of {@code columns} declares: their names, types and metadata. */
  static StructType schemaOf(List<AttributeReference> columns) {
    List<StructField> fields = new ArrayList<>();
    for (AttributeReference a : columns) {
      fields.add(new StructField(a.name(), a.dataType(), true, a.metadata()));
    }
    return new StructType(fields.toArray(new StructField[0]));
  }

  /** {@code columns}' names as plans name a scan's columns: {@code a, b}. */
  private static String namesOf(List<AttributeReference> columns) {
    List<String> names = new ArrayList<>();
    for (AttributeReference a : columns) {
      names.add(a.name());
    }
    return String.join(", ", names);
  }

  /**
   * {@code scan} (a lazyscan relation the rule planned) planned again with more conjuncts and
   * key filters: the same attributes and columns, the cost model's decision kept; null when the
   * source fails (the scan is then left as it is).
   */
  private DataSourceV2Relation replanned(DataSourceV2Relation scan, List<String> conjuncts, Map<String, KeySet> keyFilters) {
    List<AttributeReference> columns = new ArrayList<>();
    for (Attribute a : CollectionConverters.asJava(scan.output())) {
      columns.add((AttributeReference) a);
    }
    return replanned(scan, conjuncts, keyFilters, columns);
  }

  /** As above, reading {@code columns} only (some of the scan's attributes): its size estimate
   * scaled as Spark scales a projection's. */
  private DataSourceV2Relation replanned(DataSourceV2Relation scan, List<String> conjuncts,
      Map<String, KeySet> keyFilters, List<AttributeReference> columns) {
    LazyScanTable table = (LazyScanTable) scan.table();
    Map<String, String> options = new java.util.LinkedHashMap<>(scan.options().asCaseSensitiveMap());
    String where = FilterText.and(conjuncts);
    if (where != null) {
      options.put("where", where);
    }
    Map<String, Integer> keys = new HashMap<>(table.keys());
    for (Map.Entry<String, KeySet> k : keyFilters.entrySet()) {
      options.put(KEY_FILTER_PREFIX + k.getKey(), k.getValue().text);
      keys.put(k.getKey(), k.getValue().count);
    }
    long size = table.sizeInBytes();
    if (columns.size() < scan.output().size()) {
      options.put("columns", Json.names(columns));
      size = (long) (size * (double) rowWidth(columns) / rowWidth(CollectionConverters.asJava(scan.output())));
    }
    String described = describe(options);
    try {
      return planned(options, columns, conjuncts, keys, size, table.partitionColumns(), described, table.name());
    } catch (Exception e) {
      warn("lazyscan: the scan of " + described + " is not planned again: " + e);
      return null;
    }
  }

  /** The scan a lazyscan relation's options read: its table or its paths. */
  private static String describe(Map<String, String> options) {
    for (Map.Entry<String, String> e : options.entrySet()) {
      if (e.getKey().equalsIgnoreCase("table")) {
        return "table " + e.getValue();
      }
    }
    for (Map.Entry<String, String> e : options.entrySet()) {
      if (e.getKey().equalsIgnoreCase("path")) {
        return e.getValue();
      }
    }
    for (Map.Entry<String, String> e : options.entrySet()) {
      if (e.getKey().equalsIgnoreCase("paths")) {
        String inner = e.getValue().replaceAll("^\\[\"|\"\\]$", "");
        List<String> paths = new ArrayList<>();
        for (String p : inner.split("\",\"")) {
          if (paths.size() == 3) {
            paths.add("...");
            break;
          }
          paths.add(p.replace("\\\"", "\"").replace("\\\\", "\\"));
        }
        return String.join(", ", paths);
      }
    }
    return "a lazyscan scan";
  }

  /**
   * The {@code catalogTable} option of a table: its name, format, location, the relation's
   * schema (partition columns last), partition columns and, where the catalog tracks them, the
   * partitions its pruning by {@code condition} leaves; null when a location is neither local nor on S3.
   */
  private String tableJson(CatalogTable table, HadoopFsRelation fs, Expression condition, Seq<AttributeReference> output) {
    String location = locationText(table.location());
    if (location == null) {
      return null;
    }
    List<String> partitionColumns = List.of(fs.partitionSchema().fieldNames());
    String partitions = "null";
    if (!partitionColumns.isEmpty() && table.tracksPartitionsInCatalog()) {
      StringBuilder b = new StringBuilder("[");
      for (CatalogTablePartition p : CollectionConverters.asJava(prunedPartitions(table, condition, output))) {
        String folder = locationText(p.location());
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

  /** A location URI as lazyscan names it: a local path, or an S3 URI with its path decoded
   * (as DESCRIBE and the file systems name folders); null anywhere else. */
  private static String locationText(URI uri) {
    String scheme = ObjectStores.scheme(uri);
    if (scheme.equals("file")) {
      return uri.getPath();
    }
    return ObjectStores.S3.contains(scheme) ? scheme + "://" + uri.getAuthority() + uri.getPath() : null;
  }

  private static void warn(String message) {
    org.slf4j.LoggerFactory.getLogger(LazyScanRule.class).warn(message);
  }

  static <T> Seq<T> seq(List<T> items) {
    return CollectionConverters.asScala(items).toSeq();
  }

  /**
   * The latest decisions per session (a bounded number, the newest last). A query keeps one
   * decision per scan of it: two scans of one table (a self-join, Q17's lineitem twice) are two
   * decisions; a scan planned again in the same query (more conjuncts, key filters, fewer
   * columns) replaces its own. The first decision of a new query about a table replaces those
   * of earlier queries about it.
   */
  static final class Decisions {
    private static final int KEPT = 64;
    private static final Map<SparkSession, List<Decision>> BY_SESSION = new java.util.WeakHashMap<>();

    /** One decision: the scan's name, what was decided, and the query it was made in. */
    private static final class Decision {
      final String scan;
      final String decision;
      final Object query;

      Decision(String scan, String decision, Object query) {
        this.scan = scan;
        this.decision = decision;
        this.query = query;
      }
    }

    private Decisions() {}

    static void record(SparkSession session, String scan, String decision) {
      record(session, scan, decision, null);
    }

    /** Records {@code decision} for {@code scan}; {@code replaces}: the decision of the same
     * scan in this query that it supersedes (the scan planned again), or null for a new scan. */
    static synchronized void record(SparkSession session, String scan, String decision, String replaces) {
      List<Decision> kept = BY_SESSION.computeIfAbsent(session, s -> new ArrayList<>());
      Object query = Attempts.query();
      String before = null;
      Decision same = null;
      for (java.util.Iterator<Decision> it = kept.iterator(); it.hasNext(); ) {
        Decision d = it.next();
        if (!d.scan.equals(scan)) {
          continue;
        }
        before = d.decision;
        if (query == null || d.query != query) {
          it.remove(); // an earlier query's, or made outside one
        } else if (d.decision.equals(decision) || d.decision.equals(replaces)) {
          same = d;
        }
      }
      if (same != null) {
        kept.remove(same);
      }
      kept.add(new Decision(scan, decision, query));
      if (kept.size() > KEPT) {
        kept.remove(0);
      }
      if (!decision.equals(before)) {
        org.slf4j.LoggerFactory.getLogger(LazyScanRule.class).info("lazyscan: {}: {}", scan, decision);
      }
    }

    /** The latest decision for {@code scan} in {@code session}, or null. */
    static synchronized String latest(SparkSession session, String scan) {
      List<Decision> kept = BY_SESSION.get(session);
      if (kept == null) {
        return null;
      }
      for (int i = kept.size() - 1; i >= 0; i--) {
        if (kept.get(i).scan.equals(scan)) {
          return kept.get(i).decision;
        }
      }
      return null;
    }

    static synchronized String[] of(SparkSession session) {
      List<Decision> kept = BY_SESSION.get(session);
      if (kept == null) {
        return new String[0];
      }
      List<String> out = new ArrayList<>();
      for (Decision d : kept) {
        out.add(d.scan + ": " + d.decision);
      }
      return out.toArray(new String[0]);
    }

    static synchronized void clear(SparkSession session) {
      BY_SESSION.remove(session);
    }
  }

  /** The key filters tried per query (its planning tracker): a filter is collected once. */
  static final class Attempts {
    private static final Map<Object, Set<String>> BY_QUERY = new java.util.WeakHashMap<>();

    private Attempts() {}

    /** The query being planned on this thread (its planning tracker), or null outside one. */
    static Object query() {
      scala.Option<org.apache.spark.sql.catalyst.QueryPlanningTracker> tracker =
          org.apache.spark.sql.catalyst.QueryPlanningTracker$.MODULE$.get();
      return tracker.isEmpty() ? null : tracker.get();
    }

    /** Whether {@code attempt} is new for the query being planned (always, outside one). */
    static synchronized boolean first(String attempt) {
      Object query = query();
      return query == null || BY_QUERY.computeIfAbsent(query, q -> new java.util.HashSet<>()).add(attempt);
    }

    private static final Map<Object, Map<String, Object>> KEYS_BY_QUERY = new java.util.WeakHashMap<>();

    /** The keys collected from {@code source} for the query being planned: a {@link KeySet},
     * the reason there is none, or null when not collected yet (always, outside a query). */
    static synchronized Object keys(String source) {
      Map<String, Object> known = KEYS_BY_QUERY.get(query());
      return known == null ? null : known.get(source);
    }

    static synchronized void remember(String source, Object keys) {
      Object query = query();
      if (query != null) {
        KEYS_BY_QUERY.computeIfAbsent(query, q -> new HashMap<>()).put(source, keys);
      }
    }
  }

  /**
   * A set of join keys in the text form of the {@code keyFilter.<column>} option ({@code
   * lazyscan.KeyFilter.to_text}): exact, a bitmap over [min, max] for dense integer-like keys,
   * a sorted array otherwise, as {@code lazyscan.key_filter} picks them for up to its exact
   * limit of keys.
   */
  static final class KeySet {
    private static final int EMPTY = 0;
    private static final int BITMAP = 1;
    private static final int HASH = 2;
    private static final int INTEGER = 0;
    private static final int DATE = 1;
    private static final int TIMESTAMP = 2;
    private static final int BYTES = 3;
    private static final long BITMAP_BITS_PER_KEY = 64;
    private static final long BITMAP_SMALL_BITS = 1L << 22;
    private static final long BITMAP_MAX_BITS = 1L << 28;

    final String text;
    final int count;

    private KeySet(String text, int count) {
      this.text = text;
      this.count = count;
    }

    /** (family, scale) of keys of Spark type {@code t} as lazyscan's key filters take them, or
     * null when not supported. */
    static int[] family(DataType t) {
      if (t instanceof ByteType || t instanceof ShortType || t instanceof IntegerType || t instanceof LongType) {
        return new int[] {INTEGER, 0};
      }
      if (t instanceof DecimalType && ((DecimalType) t).precision() <= 18) {
        return new int[] {INTEGER, ((DecimalType) t).scale()};
      }
      if (t instanceof DateType) {
        return new int[] {DATE, 0};
      }
      if (t instanceof TimestampType || t instanceof TimestampNTZType) {
        return new int[] {TIMESTAMP, 6};
      }
      if (t instanceof StringType && ((StringType) t).isUTF8BinaryCollation()) {
        return new int[] {BYTES, 0};
      }
      return null;
    }

    /** The keys in the first column of {@code rows} (distinct, not NULL) of type {@code t}. */
    static KeySet of(InternalRow[] rows, DataType t) {
      int[] family = family(t);
      if (family[0] == BYTES) {
        byte[][] keys = new byte[rows.length][];
        for (int i = 0; i < rows.length; i++) {
          keys[i] = rows[i].getUTF8String(0).getBytes();
        }
        java.util.Arrays.sort(keys, java.util.Arrays::compareUnsigned);
        return bytes(keys);
      }
      long[] keys = new long[rows.length];
      for (int i = 0; i < rows.length; i++) {
        InternalRow r = rows[i];
        if (t instanceof ByteType) {
          keys[i] = r.getByte(0);
        } else if (t instanceof ShortType) {
          keys[i] = r.getShort(0);
        } else if (t instanceof IntegerType || t instanceof DateType) {
          keys[i] = r.getInt(0);
        } else if (t instanceof DecimalType) {
          DecimalType d = (DecimalType) t;
          keys[i] = r.getDecimal(0, d.precision(), d.scale()).toUnscaledLong();
        } else {
          keys[i] = r.getLong(0);
        }
      }
      java.util.Arrays.sort(keys);
      return integers(keys, family[0], family[1]);
    }

    private static KeySet integers(long[] keys, int family, int scale) {
      int n = keys.length;
      if (n == 0) {
        return new KeySet(text(EMPTY, family, scale, 0, new byte[16], new byte[0]), 0);
      }
      long lo = keys[0];
      long hi = keys[n - 1];
      ByteBuffer bounds = little(16).putLong(lo).putLong(hi);
      long span = hi - lo + 1; // a span beyond long wraps below 1: no bitmap
      if (span > 0 && span <= BITMAP_MAX_BITS && (span <= BITMAP_BITS_PER_KEY * n || span <= BITMAP_SMALL_BITS)) {
        long[] words = new long[(int) ((hi - lo) / 64 + 1)];
        for (long k : keys) {
          long d = k - lo;
          words[(int) (d >>> 6)] |= 1L << (d & 63);
        }
        ByteBuffer body = little(8 * words.length);
        for (long w : words) {
          body.putLong(w);
        }
        return new KeySet(text(BITMAP, family, scale, n, bounds.array(), body.array()), n);
      }
      ByteBuffer body = little(8 * n);
      for (long k : keys) {
        body.putLong(k);
      }
      return new KeySet(text(HASH, family, scale, n, bounds.array(), body.array()), n);
    }

    private static KeySet bytes(byte[][] keys) {
      int n = keys.length;
      if (n == 0) {
        return new KeySet(text(EMPTY, BYTES, 0, 0, new byte[8], new byte[0]), 0);
      }
      byte[] lo = keys[0];
      byte[] hi = keys[n - 1];
      ByteBuffer bounds = little(8 + lo.length + hi.length).putInt(lo.length).putInt(hi.length).put(lo).put(hi);
      long data = 0;
      for (byte[] k : keys) {
        data += k.length;
      }
      ByteBuffer body = little((int) (8 + 8L * (n + 1) + data)).putLong(n + 1).putLong(0);
      long offset = 0;
      for (byte[] k : keys) {
        offset += k.length;
        body.putLong(offset);
      }
      for (byte[] k : keys) {
        body.put(k);
      }
      return new KeySet(text(HASH, BYTES, 0, n, bounds.array(), body.array()), n);
    }

    private static ByteBuffer little(int size) {
      return ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** The text form: {@code lskf:} and base64 of magic, version, CRC-32 of the payload and
     * the payload (header {@code <BBbBqddQ}: kind, family, scale, k, count, fpp, measured fpp,
     * size of the bounds; the bounds; the body). */
    private static String text(int kind, int family, int scale, int count, byte[] bounds, byte[] body) {
      ByteBuffer payload = little(36 + bounds.length + body.length);
      payload.put((byte) kind).put((byte) family).put((byte) scale).put((byte) 0).putLong(count);
      payload.putDouble(0.0).putDouble(Double.NaN).putLong(bounds.length).put(bounds).put(body);
      java.util.zip.CRC32 crc = new java.util.zip.CRC32();
      crc.update(payload.array());
      ByteBuffer blob = little(9 + payload.capacity());
      blob.put(new byte[] {'L', 'S', 'K', 'F', 2}).putInt((int) crc.getValue()).put(payload.array());
      return "lskf:" + java.util.Base64.getEncoder().encodeToString(blob.array());
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
