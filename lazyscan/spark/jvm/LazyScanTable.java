package lazyscan.spark.jvm;

import java.util.Map;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.Column;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * The lazyscan Python data source's table under a name that says what the scan does, so that
 * {@code explain()} shows it on the relation and on the {@code BatchScan}: {@code lazyscan(where:
 * ..., columns: ...)}. Everything else is the Python source's table.
 */
final class LazyScanTable implements SupportsRead {
  private final SupportsRead python;
  private final String name;

  LazyScanTable(SupportsRead python, String name) {
    this.python = python;
    this.name = name;
  }

  static Table wrap(Table table, String where, String columns) {
    if (!(table instanceof SupportsRead)) {
      return table;
    }
    return new LazyScanTable((SupportsRead) table, table.name() + "(where: " + where + ", columns: " + columns + ")");
  }

  @Override
  public String name() {
    return name;
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
    return python.newScanBuilder(options);
  }

  @Override
  @SuppressWarnings("deprecation")
  public StructType schema() {
    return python.schema();
  }

  @Override
  public Column[] columns() {
    return python.columns();
  }

  @Override
  public Transform[] partitioning() {
    return python.partitioning();
  }

  @Override
  public Map<String, String> properties() {
    return python.properties();
  }

  @Override
  public Set<TableCapability> capabilities() {
    return python.capabilities();
  }
}
