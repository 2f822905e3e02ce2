package lazyscan.spark.jvm;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.InputFileBlockLength;
import org.apache.spark.sql.catalyst.expressions.InputFileBlockStart;
import org.apache.spark.sql.catalyst.expressions.InputFileName;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.execution.datasources.HadoopFsRelation;
import org.apache.spark.sql.execution.datasources.LogicalRelation;
import org.apache.spark.sql.execution.datasources.parquet.ParquetFileFormat;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import scala.collection.immutable.Seq;
import scala.jdk.javaapi.CollectionConverters;
import scala.runtime.AbstractFunction1;

/**
 * Replaces a filtered scan of Spark's Parquet file source by the lazyscan Python data source.
 *
 * <p>Matches {@code Filter} over a {@code LogicalRelation(HadoopFsRelation)} of Parquet files read
 * by path (optionally with a {@code Project} between or above them), and puts in its place the
 * relation of {@code spark.read.format("lazyscan")} over the same root paths, with the filter's
 * translatable conjuncts as the {@code where} option and only the needed columns (schema and
 * {@code columns} option). The new relation's output is the old relation's attributes (same
 * names, types and expression ids), so the plan above it is unchanged; Spark's {@code Filter}
 * stays above and checks every row again.
 *
 * <p>Left to Spark's reader: {@code spark.lazyscan.enabled=false} (read at each optimization, so
 * it switches per query), a filter with no translatable conjunct other than {@code IS NOT NULL},
 * catalog tables, files outside the local file system, bucketed or streaming relations, reader
 * options other than paths and {@code mergeSchema}, scans whose {@code _metadata} columns are
 * needed, queries calling {@code input_file_name()} (or the block start / length), sessions
 * ignoring corrupt or missing files, and sessions where the {@code lazyscan} data source is not
 * registered ({@code lazyscan.spark.enable}). The files are Spark's: the root paths of the
 * relation, listed as Spark lists them (hidden files skipped, a table's folder read as plain
 * files).
 */
public final class LazyScanRule extends Rule<LogicalPlan> {
  /** The session setting that turns the rule off ({@code false}). */
  public static final String ENABLED = "spark.lazyscan.enabled";

  private static final String IGNORE_CORRUPT = "spark.sql.files.ignoreCorruptFiles";
  private static final String IGNORE_MISSING = "spark.sql.files.ignoreMissingFiles";
  private static final String BINARY_AS_STRING = "spark.sql.parquet.binaryAsString";

  private static final Set<String> PLAIN_OPTIONS = Set.of("path", "paths", "mergeschema");

  private final SparkSession session;

  public LazyScanRule(SparkSession session) {
    this.session = session;
  }

  @Override
  public String ruleName() {
    return "lazyscan.spark.jvm.LazyScanRule";
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    if (!isTrue(ENABLED, "true") || isTrue(IGNORE_CORRUPT, "false") || isTrue(IGNORE_MISSING, "false")) {
      return plan;
    }
    if (readsInputFile(plan)) {
      return plan; // input_file_name() and friends are known to Spark's file scans only
    }
    return rewrite(plan);
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

  private LogicalPlan rewrite(LogicalPlan plan) {
    LogicalPlan replaced = replace(plan);
    if (replaced != null) {
      return replaced;
    }
    return plan.mapChildren(
            new AbstractFunction1<LogicalPlan, LogicalPlan>() {
              @Override
              public LogicalPlan apply(LogicalPlan child) {
                return rewrite(child);
              }
            });
  }

  /** {@code plan} with its Parquet relation replaced, or null when it does not match. */
  private LogicalPlan replace(LogicalPlan plan) {
    if (plan instanceof Project && ((Project) plan).child() instanceof Filter) {
      Project project = (Project) plan;
      Filter filter = (Filter) project.child();
      if (eligible(filter.child())) {
        AttributeSet needed = project.references().$plus$plus(filter.condition().references());
        LogicalPlan scan = lazyscanRelation((LogicalRelation) filter.child(), filter.condition(), needed);
        return scan == null ? null : project.withNewChildren(seq(List.of(filter.withNewChildren(seq(List.of(scan))))));
      }
    }
    if (plan instanceof Filter) {
      Filter filter = (Filter) plan;
      LogicalPlan child = filter.child();
      if (child instanceof Project && eligible(((Project) child).child()) && onlyAttributes((Project) child)) {
        Project project = (Project) child;
        LogicalPlan scan = lazyscanRelation((LogicalRelation) project.child(), filter.condition(), project.references());
        return scan == null ? null : filter.withNewChildren(seq(List.of(project.withNewChildren(seq(List.of(scan))))));
      }
      if (eligible(child)) {
        LogicalPlan scan = lazyscanRelation((LogicalRelation) child, filter.condition(), child.outputSet());
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

  private static boolean eligible(LogicalPlan plan) {
    if (!(plan instanceof LogicalRelation)) {
      return false;
    }
    LogicalRelation r = (LogicalRelation) plan;
    if (!(r.relation() instanceof HadoopFsRelation) || r.isStreaming() || r.catalogTable().isDefined()) {
      return false;
    }
    HadoopFsRelation fs = (HadoopFsRelation) r.relation();
    if (!(fs.fileFormat() instanceof ParquetFileFormat) || fs.bucketSpec().isDefined()) {
      return false;
    }
    for (String key : CollectionConverters.asJava(fs.options()).keySet()) {
      if (!PLAIN_OPTIONS.contains(key.toLowerCase(Locale.ROOT))) {
        return false;
      }
    }
    return true;
  }

  /**
   * The lazyscan relation reading {@code needed} of {@code relation} (in the relation's column
   * order) with {@code condition}'s translatable conjuncts as its filter; null when nothing
   * translates or the data source cannot be loaded.
   */
  private LogicalPlan lazyscanRelation(LogicalRelation relation, Expression condition, AttributeSet needed) {
    Map<ExprId, AttributeReference> byId = new HashMap<>();
    for (AttributeReference a : CollectionConverters.asJava(relation.output())) {
      byId.put(a.exprId(), a);
    }
    String where = FilterText.conjuncts(condition, byId);
    if (where == null) {
      return null;
    }
    HadoopFsRelation fs = (HadoopFsRelation) relation.relation();
    List<AttributeReference> columns = new ArrayList<>();
    List<StructField> fields = new ArrayList<>();
    for (AttributeReference a : CollectionConverters.asJava(relation.output())) {
      if (needed.contains(a)) {
        if (fs.schema().getFieldIndex(a.name()).isEmpty()) {
          return null; // a metadata column (_metadata): Spark's file scan fills it
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
    List<String> paths = new ArrayList<>();
    for (Path p : CollectionConverters.asJava(fs.location().rootPaths())) {
      if (!"file".equals(p.toUri().getScheme())) {
        // object stores: the credentials and settings are Hadoop's (fs.s3a.*), not yet passed on
        return null;
      }
      paths.add(p.toString());
    }
    try {
      Dataset<Row> df =
          session
              .read()
              .format("lazyscan")
              .schema(new StructType(fields.toArray(new StructField[0])))
              .option("where", where)
              .option("columns", jsonNames(columns))
              .option("pushFilters", "false")
              // the files Spark's reader would read: a table's folder too, as plain files
              .option("rawFiles", "true")
              .option("binaryAsString", Boolean.toString(isTrue(BINARY_AS_STRING, "false")))
              .load(paths.toArray(new String[0]));
      LogicalPlan analyzed = df.queryExecution().analyzed();
      if (!(analyzed instanceof DataSourceV2Relation)) {
        warn("lazyscan: the lazyscan data source gave " + analyzed.nodeName() + "; Spark's reader is kept");
        return null;
      }
      DataSourceV2Relation v2 = (DataSourceV2Relation) analyzed;
      if (v2.output().size() != columns.size()) {
        return null;
      }
      List<String> names = new ArrayList<>();
      for (AttributeReference a : columns) {
        names.add(a.name());
      }
      return v2.copy(
          LazyScanTable.wrap(v2.table(), where, String.join(", ", names)),
          seq(columns),
          v2.catalog(),
          v2.identifier(),
          v2.options(),
          v2.timeTravelSpec());
    } catch (Exception e) {
      warn("lazyscan: Spark's Parquet reader is kept for " + paths + ": " + e);
      return null;
    }
  }

  private static String jsonNames(List<AttributeReference> columns) {
    StringBuilder b = new StringBuilder("[");
    for (AttributeReference a : columns) {
      if (b.length() > 1) {
        b.append(", ");
      }
      b.append('"');
      for (char c : a.name().toCharArray()) {
        if (c == '"' || c == '\\') {
          b.append('\\').append(c);
        } else if (c < 0x20) {
          b.append(String.format("\\u%04x", (int) c));
        } else {
          b.append(c);
        }
      }
      b.append('"');
    }
    return b.append(']').toString();
  }

  private static void warn(String message) {
    org.slf4j.LoggerFactory.getLogger(LazyScanRule.class).warn(message);
  }

  private static <T> Seq<T> seq(List<T> items) {
    return CollectionConverters.asScala(items).toSeq();
  }
}
