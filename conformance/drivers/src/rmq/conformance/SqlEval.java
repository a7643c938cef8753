// SQL92 selectors evaluated by Apache's own filter module (the parser and expression classes
// the broker compiles subscriptions with), so that rmq's evaluator is checked against Apache's
// answers rather than against a table written by hand.  No servers are involved.
package rmq.conformance;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.util.HashMap;
import java.util.Map;
import org.apache.rocketmq.filter.SqlFilter;
import org.apache.rocketmq.filter.expression.EvaluationContext;
import org.apache.rocketmq.filter.expression.Expression;

final class SqlEval {
    private SqlEval() {
    }

    /** Each of spec.cases ({expression, properties}) compiled and evaluated: {compiled: true,
     * value: true|false|null|"error"} or {compiled: false, error: message}. */
    static JSONObject evaluate(Spec spec) {
        JSONArray cases = spec.json.getJSONArray("cases");
        JSONArray results = new JSONArray();
        SqlFilter filter = new SqlFilter();
        for (int i = 0; i < cases.size(); i++) {
            JSONObject one = cases.getJSONObject(i);
            JSONObject result = new JSONObject(true);
            Expression expression;
            try {
                expression = filter.compile(one.getString("expression"));
            } catch (Throwable e) {
                result.put("compiled", false);
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                result.put("error", cause.toString());
                results.add(result);
                continue;
            }
            result.put("compiled", true);
            final Map<String, String> properties = new HashMap<String, String>();
            JSONObject given = one.getJSONObject("properties");
            if (given != null) {
                for (String name : given.keySet()) {
                    properties.put(name, given.getString(name));
                }
            }
            EvaluationContext context = new EvaluationContext() {
                @Override
                public Object get(String name) {
                    return properties.get(name);
                }

                @Override
                public Map<String, Object> keyValues() {
                    return new HashMap<String, Object>(properties);
                }
            };
            try {
                Object value = expression.evaluate(context);
                result.put("value", value == null ? "null" : value.toString());
            } catch (Throwable e) {
                result.put("value", "error");
            }
            results.add(result);
        }
        JSONObject out = new JSONObject();
        out.put("results", results);
        return out;
    }
}
