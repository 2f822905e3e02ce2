package lazyscan.spark.jvm;

import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.catalyst.expressions.And;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.Contains;
import org.apache.spark.sql.catalyst.expressions.EndsWith;
import org.apache.spark.sql.catalyst.expressions.EqualNullSafe;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GreaterThan;
import org.apache.spark.sql.catalyst.expressions.GreaterThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.In;
import org.apache.spark.sql.catalyst.expressions.InSet;
import org.apache.spark.sql.catalyst.expressions.IsNotNull;
import org.apache.spark.sql.catalyst.expressions.IsNull;
import org.apache.spark.sql.catalyst.expressions.LessThan;
import org.apache.spark.sql.catalyst.expressions.LessThanOrEqual;
import org.apache.spark.sql.catalyst.expressions.Like;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.Not;
import org.apache.spark.sql.catalyst.expressions.Or;
import org.apache.spark.sql.catalyst.expressions.StartsWith;
import org.apache.spark.sql.types.BooleanType;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DateType;
import org.apache.spark.sql.types.Decimal;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampNTZType;
import org.apache.spark.sql.types.TimestampType;
import scala.jdk.javaapi.CollectionConverters;

/**
 * Catalyst filters as the text of lazyscan's {@code where} option (Spark SQL syntax).
 *
 * <p>Only what lazyscan evaluates with exactly Spark's result is translated: comparisons,
 * {@code <=>}, {@code IN}, {@code IS [NOT] NULL}, {@code LIKE} (prefix, suffix and substring
 * matches as Spark simplifies them, other patterns with their escape character), and AND, OR,
 * NOT of those, between a column of the scanned relation and a literal of a boolean, integral,
 * floating, decimal, date, timestamp (an instant written in UTC, so the session time zone does
 * not matter), timestamp without time zone or binary-collated string type. Anything else
 * (binary, casts, functions, other collations, column-to-column comparisons) gives {@code null}: that
 * conjunct is left to Spark. Spark keeps its filter above the scan, so the text only has to
 * keep every row Spark's filter keeps; being exact, it removes no more.
 */
final class FilterText {
  private FilterText() {}

  /**
   * The conjuncts of {@code condition} that translate, ANDed; null when none does, or when only
   * {@code IS NOT NULL} ones do (Spark infers those for join keys and compared columns; alone
   * they remove too few rows to pay for the switch).
   */
  static String conjuncts(Expression condition, Map<ExprId, AttributeReference> columns) {
    List<String> parts = translated(condition, columns);
    boolean selective = false;
    for (String p : parts) {
      selective |= !isNotNull(p);
    }
    return selective ? and(parts) : null;
  }

  /** The texts of the conjuncts of {@code condition} that translate, in order, each once. */
  static List<String> translated(Expression condition, Map<ExprId, AttributeReference> columns) {
    List<String> parts = new ArrayList<>();
    for (Expression e : splitAnd(condition)) {
      String text = translate(e, columns);
      if (text != null && !parts.contains(text)) {
        parts.add(text);
      }
    }
    return parts;
  }

  /** Whether a translated conjunct is a column's {@code IS NOT NULL}. */
  static boolean isNotNull(String conjunct) {
    return conjunct.matches("`([^`]|``)*` IS NOT NULL");
  }

  /** Translated conjuncts ANDed (null when there are none). */
  static String and(List<String> parts) {
    if (parts.isEmpty()) {
      return null;
    }
    if (parts.size() == 1) {
      return parts.get(0);
    }
    StringBuilder b = new StringBuilder();
    for (String p : parts) {
      if (b.length() > 0) {
        b.append(" AND ");
      }
      b.append('(').append(p).append(')');
    }
    return b.toString();
  }

  static List<Expression> splitAnd(Expression e) {
    List<Expression> out = new ArrayList<>();
    if (e instanceof And) {
      And a = (And) e;
      out.addAll(splitAnd(a.left()));
      out.addAll(splitAnd(a.right()));
    } else {
      out.add(e);
    }
    return out;
  }

  /** {@code e} as lazyscan SQL text, or null when it is not translated exactly. */
  static String translate(Expression e, Map<ExprId, AttributeReference> columns) {
    if (!e.deterministic()) {
      return null;
    }
    if (e instanceof And) {
      return binary("AND", ((And) e).left(), ((And) e).right(), columns);
    }
    if (e instanceof Or) {
      return binary("OR", ((Or) e).left(), ((Or) e).right(), columns);
    }
    if (e instanceof Not) {
      String child = translate(((Not) e).child(), columns);
      return child == null ? null : "NOT (" + child + ")";
    }
    if (e instanceof IsNull) {
      String c = column(((IsNull) e).child(), columns);
      return c == null ? null : c + " IS NULL";
    }
    if (e instanceof IsNotNull) {
      String c = column(((IsNotNull) e).child(), columns);
      return c == null ? null : c + " IS NOT NULL";
    }
    if (e instanceof AttributeReference && ((AttributeReference) e).dataType() instanceof BooleanType) {
      return column(e, columns);
    }
    String op = comparison(e);
    if (op != null) {
      Expression left = e.children().apply(0);
      Expression right = e.children().apply(1);
      if (right instanceof Literal && left instanceof AttributeReference) {
        return compare(left, op, (Literal) right, columns, false);
      }
      if (left instanceof Literal && right instanceof AttributeReference) {
        return compare(right, op, (Literal) left, columns, true);
      }
      return null;
    }
    if (e instanceof In) {
      In in = (In) e;
      String c = column(in.value(), columns);
      if (c == null) {
        return null;
      }
      List<String> values = new ArrayList<>();
      for (Expression v : CollectionConverters.asJava(in.list())) {
        if (!(v instanceof Literal)) {
          return null;
        }
        String t = literal(((Literal) v).value(), in.value().dataType());
        if (t == null) {
          return null;
        }
        values.add(t);
      }
      return values.isEmpty() ? null : c + " IN (" + String.join(", ", values) + ")";
    }
    if (e instanceof InSet) {
      InSet in = (InSet) e;
      String c = column(in.child(), columns);
      if (c == null) {
        return null;
      }
      List<String> values = new ArrayList<>();
      for (Object v : CollectionConverters.asJava(in.hset())) {
        String t = literal(v, in.child().dataType());
        if (t == null) {
          return null;
        }
        values.add(t);
      }
      return values.isEmpty() ? null : c + " IN (" + String.join(", ", values) + ")";
    }
    if (e instanceof Like) {
      Like like = (Like) e;
      String c = column(like.left(), columns);
      if (c == null || !(like.right() instanceof Literal) || ((Literal) like.right()).value() == null) {
        return null;
      }
      String pattern = ((Literal) like.right()).value().toString();
      char escape = like.escapeChar();
      if (!wellEscaped(pattern, escape) || escape == '\'') {
        return null;
      }
      return c + " LIKE " + quote(pattern) + (escape == '\\' ? "" : " ESCAPE " + quote(String.valueOf(escape)));
    }
    if (e instanceof StartsWith || e instanceof EndsWith || e instanceof Contains) {
      Expression left = e.children().apply(0);
      Expression right = e.children().apply(1);
      String c = column(left, columns);
      if (c == null || !(right instanceof Literal) || ((Literal) right).value() == null) {
        return null;
      }
      String text = likeEscaped(((Literal) right).value().toString());
      String pattern = e instanceof StartsWith ? text + "%" : e instanceof EndsWith ? "%" + text : "%" + text + "%";
      return c + " LIKE " + quote(pattern);
    }
    return null;
  }

  private static String binary(String op, Expression l, Expression r, Map<ExprId, AttributeReference> columns) {
    String a = translate(l, columns);
    String b = translate(r, columns);
    return a == null || b == null ? null : "(" + a + ") " + op + " (" + b + ")";
  }

  private static String comparison(Expression e) {
    if (e instanceof EqualTo) {
      return "=";
    }
    if (e instanceof EqualNullSafe) {
      return "<=>";
    }
    if (e instanceof LessThan) {
      return "<";
    }
    if (e instanceof LessThanOrEqual) {
      return "<=";
    }
    if (e instanceof GreaterThan) {
      return ">";
    }
    if (e instanceof GreaterThanOrEqual) {
      return ">=";
    }
    return null;
  }

  private static String compare(Expression attr, String op, Literal value, Map<ExprId, AttributeReference> columns, boolean flipped) {
    String c = column(attr, columns);
    if (c == null) {
      return null;
    }
    if (value.value() == null) {
      // x = NULL is never true; x <=> NULL is IS NULL
      return "<=>".equals(op) ? c + " IS NULL" : null;
    }
    if (!value.dataType().sameType(attr.dataType())) {
      return null;
    }
    String v = literal(value.value(), attr.dataType());
    if (v == null) {
      return null;
    }
    return flipped ? v + " " + op + " " + c : c + " " + op + " " + v;
  }

  /** The column as a quoted name, when it is one of {@code columns} (by expression id) and has a
   * translated type. */
  static String column(Expression e, Map<ExprId, AttributeReference> columns) {
    if (!(e instanceof AttributeReference)) {
      return null;
    }
    // the relation's attribute: its name is the file's spelling, the query's may differ in case
    AttributeReference a = columns.get(((AttributeReference) e).exprId());
    if (a == null) {
      return null;
    }
    if (!supported(a.dataType())) {
      return null;
    }
    return "`" + a.name().replace("`", "``") + "`";
  }

  static boolean supported(DataType t) {
    if (t instanceof StringType) {
      return ((StringType) t).isUTF8BinaryCollation();
    }
    return t instanceof BooleanType
        || t instanceof ByteType
        || t instanceof ShortType
        || t instanceof IntegerType
        || t instanceof LongType
        || t instanceof FloatType
        || t instanceof DoubleType
        || t instanceof DecimalType
        || t instanceof DateType
        || t instanceof TimestampType
        || t instanceof TimestampNTZType;
  }

  /** A Catalyst value of type {@code t} as a typed literal; null when not translated. */
  static String literal(Object v, DataType t) {
    if (v == null) {
      return "NULL";
    }
    if (!supported(t)) {
      return null;
    }
    if (t instanceof BooleanType) {
      return ((Boolean) v) ? "TRUE" : "FALSE";
    }
    if (t instanceof ByteType) {
      byte b = (Byte) v;
      return b == Byte.MIN_VALUE ? "CAST('" + b + "' AS TINYINT)" : b + "Y";
    }
    if (t instanceof ShortType) {
      short s = (Short) v;
      return s == Short.MIN_VALUE ? "CAST('" + s + "' AS SMALLINT)" : s + "S";
    }
    if (t instanceof IntegerType) {
      int i = (Integer) v;
      return i == Integer.MIN_VALUE ? "CAST('" + i + "' AS INT)" : Integer.toString(i);
    }
    if (t instanceof LongType) {
      long l = (Long) v;
      return l == Long.MIN_VALUE ? "CAST('" + l + "' AS BIGINT)" : l + "L";
    }
    if (t instanceof FloatType) {
      float f = (Float) v;
      if (Float.isNaN(f) || Float.isInfinite(f)) {
        return "CAST('" + f + "' AS FLOAT)";
      }
      return Float.toString(f) + "F";
    }
    if (t instanceof DoubleType) {
      double d = (Double) v;
      if (Double.isNaN(d) || Double.isInfinite(d)) {
        return "CAST('" + d + "' AS DOUBLE)";
      }
      return Double.toString(d) + "D";
    }
    if (t instanceof DecimalType) {
      return ((Decimal) v).toJavaBigDecimal().toPlainString() + "BD";
    }
    if (t instanceof DateType) {
      LocalDate d = LocalDate.ofEpochDay((Integer) v);
      if (d.getYear() < 1 || d.getYear() > 9999) {
        return null;
      }
      return "DATE '" + d + "'";
    }
    if (t instanceof TimestampType || t instanceof TimestampNTZType) {
      // microseconds since the epoch: an instant (TIMESTAMP, written in UTC with its offset, so
      // that the session time zone does not matter) or a wall-clock time (TIMESTAMP_NTZ)
      long micros = (Long) v;
      LocalDateTime time = LocalDateTime.ofEpochSecond(
          Math.floorDiv(micros, 1_000_000L), (int) Math.floorMod(micros, 1_000_000L) * 1000, ZoneOffset.UTC);
      if (time.getYear() < 1 || time.getYear() > 9999) {
        return null;
      }
      String text = time.format(TIMESTAMP_TEXT);
      return t instanceof TimestampType ? "TIMESTAMP '" + text + "+00:00'" : "TIMESTAMP_NTZ '" + text + "'";
    }
    if (t instanceof StringType) {
      return quote(v.toString());
    }
    return null;
  }

  private static final DateTimeFormatter TIMESTAMP_TEXT = DateTimeFormatter.ofPattern("uuuu-MM-dd HH:mm:ss.SSSSSS");

  static String quote(String s) {
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'";
  }

  /** Whether every escape character in {@code pattern} precedes {@code _}, {@code %} or itself
   * (Spark refuses other patterns). */
  private static boolean wellEscaped(String pattern, char escape) {
    for (int i = 0; i < pattern.length(); i++) {
      if (pattern.charAt(i) == escape) {
        if (i + 1 == pattern.length()) {
          return false;
        }
        char next = pattern.charAt(++i);
        if (next != '_' && next != '%' && next != escape) {
          return false;
        }
      }
    }
    return true;
  }

  private static String likeEscaped(String s) {
    return s.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_");
  }
}
