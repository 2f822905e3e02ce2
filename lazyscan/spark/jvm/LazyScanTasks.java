package lazyscan.spark.jvm;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.trees.TreeNodeTag;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2Relation;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The tasks route of a scan {@link LazyScanRule} takes: in place of the {@code lazyscan} data
 * source's relation, the {@code mapInArrow} plan of the same read (same options, schema, filter
 * and tasks), planned by the driver's Python process ({@code lazyscan/spark/rule_tasks.py}),
 * which the JVM calls back through Py4J as it calls the cost model. Spark then starts no Python
 * planning worker for the scan: the data source is planned in two, each importing lazyscan,
 * which after a minute without queries are new processes.
 *
 * <p>Taken for a query that reads one relation, on a classic session whose driver registered its
 * planner ({@code lazyscan.spark.enable}); the data source route otherwise: Spark plans a join
 * by its relations' sizes, which the data source relation gives and an RDD of tasks does not
 * (Spark would never broadcast it), and a Spark Connect server has no driver Python. The session
 * setting {@code spark.lazyscan.scanRoute} is {@code auto} (default) or {@code source} (the data
 * source route always). A planner that fails leaves the scan to the data source route.
 */
public final class LazyScanTasks {
  /** The session setting: {@code auto} or {@code source}. */
  public static final String ROUTE = "spark.lazyscan.scanRoute";

  /** {@code <scan>: <lazyscan(...)>} on the root of a tasks plan (read by {@link LazyScanExplain}). */
  static final TreeNodeTag<String> SCAN = new TreeNodeTag<>("lazyscan.tasksScan");
  /** The data source options of a tasks plan, as a JSON object, on its root. */
  static final TreeNodeTag<String> OPTIONS = new TreeNodeTag<>("lazyscan.tasksOptions");

  /** The driver's Python planner per session: a request as JSON in, a Dataset out. */
  private static final Map<String, Function<String, Object>> PLANNERS = new ConcurrentHashMap<>();

  private LazyScanTasks() {}

  /** Registers the planner of the driver's Python process for {@code session}. */
  public static void register(SparkSession session, Function<String, Object> planner) {
    PLANNERS.put(LazyScanChoice.sessionId(session), planner);
  }

  /** Forgets the planner of {@code session}: its scans take the data source route. */
  public static void unregister(SparkSession session) {
    PLANNERS.remove(LazyScanChoice.sessionId(session));
  }

  /**
   * The tasks plan reading {@code columns} (the attributes of the plan it goes into) with the
   * data source {@code options}: a projection giving the planned output those attributes' names
   * and expression ids; null when this route is not taken or the planner fails.
   */
  static LogicalPlan plan(SparkSession session, Map<String, String> options, List<AttributeReference> columns,
      String name, String described) {
    String route = session.conf().get(ROUTE, "auto").trim().toLowerCase(Locale.ROOT);
    Function<String, Object> planner = PLANNERS.get(LazyScanChoice.sessionId(session));
    if (planner == null || route.equals("source")) {
      return null;
    }
    String schema = LazyScanRule.schemaOf(columns).json();
    String optionsJson = LazyScanChoice.json(options);
    String request = "{\"options\": " + optionsJson + ", \"schema\": " + schema + ", \"name\": "
        + LazyScanRule.Json.string(name) + "}";
    Object planned;
    try {
      planned = planner.apply(request);
    } catch (RuntimeException e) {
      log().warn("lazyscan: the driver could not plan the tasks of {}, the data source plans them: {}",
          described, LazyScanChoice.firstLine(e));
      return null;
    }
    if (!(planned instanceof Dataset)) {
      return null;
    }
    LogicalPlan analyzed = ((Dataset<?>) planned).queryExecution().analyzed();
    List<Attribute> output = CollectionConverters.asJava(analyzed.output());
    if (output.size() != columns.size()) {
      return null;
    }
    List<NamedExpression> aliases = new ArrayList<>();
    for (int i = 0; i < columns.size(); i++) {
      AttributeReference a = columns.get(i);
      Attribute o = output.get(i);
      if (!o.dataType().sameType(a.dataType())) {
        return null;
      }
      aliases.add(new Alias(o, a.name(), a.exprId(), a.qualifier(), Option.apply(a.metadata()),
          CollectionConverters.asScala(List.<String>of()).toList()));
    }
    analyzed.setTagValue(SCAN, described + ": " + name);
    analyzed.setTagValue(OPTIONS, optionsJson);
    return new Project(CollectionConverters.asScala(aliases).toList(), analyzed);
  }

  /**
   * The data source options of each lazyscan scan of {@code plan} (an optimized plan; its
   * subqueries left out), either route, as JSON objects in plan order.
   */
  public static String[] scanOptions(LogicalPlan plan) {
    List<String> out = new ArrayList<>();
    collect(plan, out);
    return out.toArray(new String[0]);
  }

  private static void collect(LogicalPlan plan, List<String> out) {
    Option<String> tagged = plan.getTagValue(OPTIONS);
    LogicalPlan relation = plan instanceof DataSourceV2ScanRelation ? ((DataSourceV2ScanRelation) plan).relation() : plan;
    if (tagged.isDefined()) {
      out.add(tagged.get());
      return;
    }
    if (relation instanceof DataSourceV2Relation && ((DataSourceV2Relation) relation).table() instanceof LazyScanTable) {
      out.add(LazyScanChoice.json(((DataSourceV2Relation) relation).options().asCaseSensitiveMap()));
      return;
    }
    for (LogicalPlan child : CollectionConverters.asJava(plan.children())) {
      collect(child, out);
    }
  }

  private static org.slf4j.Logger log() {
    return org.slf4j.LoggerFactory.getLogger(LazyScanRule.class);
  }
}
