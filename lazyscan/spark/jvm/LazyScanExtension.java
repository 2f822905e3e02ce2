package lazyscan.spark.jvm;

import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.SparkSessionExtensions;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.rules.Rule;
import scala.runtime.AbstractFunction1;
import scala.runtime.BoxedUnit;

/**
 * The value of {@code spark.sql.extensions} that routes filtered Parquet and ORC scans to lazyscan:
 * it injects {@link LazyScanRule} into the optimizer's operator optimization batches, which run
 * before Spark's V2 scan pushdown, so the Python data source relation the rule produces is
 * planned like one that {@code spark.read.format("lazyscan")} made.
 */
public final class LazyScanExtension extends AbstractFunction1<SparkSessionExtensions, BoxedUnit> {
  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    extensions.injectOptimizerRule(
        new AbstractFunction1<SparkSession, Rule<LogicalPlan>>() {
          @Override
          public Rule<LogicalPlan> apply(SparkSession session) {
            return new LazyScanRule(session);
          }
        });
    return BoxedUnit.UNIT;
  }
}
