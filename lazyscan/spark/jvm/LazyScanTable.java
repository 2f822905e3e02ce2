package lazyscan.spark.jvm;

import java.util.List;
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
 * ..., columns: ...)}, and {@code keys: <column> (<n> keys)} for each key filter. Everything else
 * is the Python source's table. It also keeps what {@link LazyScanRule} needs to re-plan the scan
 * later in the optimizer: the translated conjuncts of its {@code where} and the estimated size of
 * the file relation it replaced.
 */
final class LazyScanTable implements SupportsRead {
  private final SupportsRead python;
  private final String name;
  private final List<String> conjuncts;
  private final Map<String, Integer> keys;
  private final long sizeInBytes;
  private final List<String> partitionColumns;
  private final String described;

  private LazyScanTable(SupportsRead python, String name, List<String> conjuncts, Map<String, Integer> keys,
      long sizeInBytes, List<String> partitionColumns, String described) {
    this.python = python;
    this.name = name;
    this.conjuncts = List.copyOf(conjuncts);
    this.keys = new java.util.TreeMap<>(keys);
    this.sizeInBytes = sizeInBytes;
    this.partitionColumns = List.copyOf(partitionColumns);
    this.described = described;
  }

  /**
   * {@code table} named for {@code where} and {@code columns} (and {@code keys}: column name to
   * key count); {@code conjuncts}: the translated conjuncts {@code where} ANDs; {@code
   * sizeInBytes}: Spark's estimate of the replaced file relation (for the columns read); {@code
   * partitionColumns}: the relation's partition columns; {@code described}: the replaced scan
   * as the decisions name it.
   */
  static Table wrap(Table table, List<String> conjuncts, String columns, Map<String, Integer> keys, long sizeInBytes,
      List<String> partitionColumns, String described) {
    if (!(table instanceof SupportsRead)) {
      return table;
    }
    return new LazyScanTable(
        (SupportsRead) table, nameOf(table.name(), conjuncts, columns, keys), conjuncts, keys, sizeInBytes,
        partitionColumns, described);
  }

  /** How plans and decisions name a lazyscan scan: {@code lazyscan(where: ..., columns: ...,
   * keys: ...)}, {@code source} being the data source's name. */
  static String nameOf(String source, List<String> conjuncts, String columns, Map<String, Integer> keys) {
    StringBuilder name = new StringBuilder(source).append("(where: ").append(FilterText.and(conjuncts));
    name.append(", columns: ").append(columns);
    for (Map.Entry<String, Integer> k : new java.util.TreeMap<>(keys).entrySet()) {
      name.append(", keys: ").append(k.getKey()).append(" (").append(k.getValue()).append(" keys)");
    }
    return name.append(')').toString();
  }

  /** The key filters of the scan: column name to number of keys. */
  Map<String, Integer> keys() {
    return keys;
  }

  /** The replaced scan as the decisions name it: {@code table <name>} or its paths. */
  String described() {
    return described;
  }

  /** The partition columns of the replaced relation. */
  List<String> partitionColumns() {
    return partitionColumns;
  }

  /** The translated conjuncts the scan's {@code where} ANDs. */
  List<String> conjuncts() {
    return conjuncts;
  }

  /** Spark's size estimate of the file relation this scan replaced. */
  long sizeInBytes() {
    return sizeInBytes;
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
