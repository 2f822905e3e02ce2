package lazyscan.spark.jvm;

import java.util.IdentityHashMap;
import java.util.LinkedHashSet;
import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.ExtendedExplainGenerator;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.execution.FileSourceScanExec;
import org.apache.spark.sql.execution.SparkPlan;
import org.apache.spark.sql.execution.adaptive.AdaptiveSparkPlanExec;
import org.apache.spark.sql.execution.adaptive.QueryStageExec;
import org.apache.spark.sql.execution.datasources.v2.BatchScanExec;
import org.apache.spark.sql.execution.exchange.ReusedExchangeExec;
import scala.jdk.javaapi.CollectionConverters;

/**
 * The {@code lazyscan} section of {@code explain()} ({@code spark.sql.extendedExplainProviders},
 * Spark 4.0+): one line per file scan of the physical plan, {@code <scan>: lazyscan(where: ...,
 * columns: ...)} for a scan lazyscan reads, {@code <scan>: Spark's reader: <reason>} for one that
 * keeps Spark's reader, a scan being {@code table <name>} or its paths, as {@link
 * LazyScanRule#decisions} names them.
 */
public final class LazyScanExplain implements ExtendedExplainGenerator {
  /** The class name {@code spark.sql.extendedExplainProviders} takes. */
  public static final String CLASS = "lazyscan.spark.jvm.LazyScanExplain";

  @Override
  public String title() {
    return "lazyscan";
  }

  @Override
  public String generateExtendedInfo(SparkPlan plan) {
    Set<String> lines = new LinkedHashSet<>();
    visit(plan, lines, new IdentityHashMap<>());
    return String.join("\n", lines);
  }

  private static void visit(SparkPlan plan, Set<String> lines, Map<SparkPlan, Boolean> seen) {
    if (plan == null || seen.put(plan, Boolean.TRUE) != null) {
      return;
    }
    scala.Option<String> tasks =
        plan.logicalLink().isDefined() ? plan.logicalLink().get().getTagValue(LazyScanTasks.SCAN) : scala.Option.empty();
    if (tasks.isDefined()) {
      lines.add(tasks.get() + " [mapInArrow tasks]");
    } else if (plan instanceof FileSourceScanExec) {
      FileSourceScanExec scan = (FileSourceScanExec) plan;
      String described = LazyScanRule.describe(
          scan.tableIdentifier().isDefined() ? scan.tableIdentifier().get() : null, scan.relation());
      lines.add(described + ": Spark's reader: " + keptBecause(scan, described));
    } else if (plan instanceof BatchScanExec && ((BatchScanExec) plan).table() instanceof LazyScanTable) {
      LazyScanTable table = (LazyScanTable) ((BatchScanExec) plan).table();
      lines.add(table.described() + ": " + table.name());
    } else if (plan instanceof AdaptiveSparkPlanExec) {
      visit(((AdaptiveSparkPlanExec) plan).executedPlan(), lines, seen);
    } else if (plan instanceof QueryStageExec) {
      visit(((QueryStageExec) plan).plan(), lines, seen);
    } else if (plan instanceof ReusedExchangeExec) {
      visit(((ReusedExchangeExec) plan).child(), lines, seen);
    }
    for (SparkPlan child : CollectionConverters.asJava(plan.children())) {
      visit(child, lines, seen);
    }
    for (SparkPlan subquery : CollectionConverters.asJava(plan.subqueries())) {
      visit(subquery, lines, seen);
    }
  }

  /** Why {@code scan} kept Spark's reader: the reason the rule put on its logical plan, else its
   * latest decision for the scan in the session. */
  private static String keptBecause(FileSourceScanExec scan, String described) {
    if (scan.logicalLink().isDefined()) {
      String tagged = tagged(scan.logicalLink().get());
      if (tagged != null) {
        return tagged;
      }
    }
    if (!LazyScanRule.isTrue(scan.session().sessionState().conf(), LazyScanRule.ENABLED, "true")) {
      return LazyScanRule.ENABLED + " is false";
    }
    String latest = LazyScanRule.Decisions.latest(scan.session(), described);
    String prefix = "Spark's reader: ";
    if (latest != null && latest.startsWith(prefix)) {
      return latest.substring(prefix.length());
    }
    return "lazyscan's rule did not see this scan (the session runs without its extension, or it was planned "
        + "while " + LazyScanRule.ENABLED + " was false)";
  }

  /** The reason on {@code plan} or the Project / Filter chain below it down to the relation. */
  private static String tagged(LogicalPlan plan) {
    LogicalPlan node = plan;
    while (true) {
      scala.Option<String> reason = node.getTagValue(LazyScanRule.KEPT_READER);
      if (reason.isDefined()) {
        return reason.get();
      }
      if ((node instanceof Filter || node instanceof Project) && node.children().size() == 1) {
        node = node.children().head();
      } else {
        return null;
      }
    }
  }
}
