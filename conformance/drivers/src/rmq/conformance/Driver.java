// Entry point of the conformance scenario drivers: `Driver <Class.method>` runs the static
// method `method(Spec)` of class rmq.conformance.<Class> (a scenario), which reads its spec
// (one JSON object on stdin), runs it with Apache's Java client against the name server the
// spec names, and prints one line `RESULT <json>` on stdout (anything else on stdout is ignored
// by the harness).  A failure prints `RESULT {"error": ...}` and exits 1.
package rmq.conformance;

import com.alibaba.fastjson.JSON;
import com.alibaba.fastjson.JSONObject;
import com.alibaba.fastjson.serializer.SerializerFeature;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;

public final class Driver {
    private Driver() {
    }

    /** The static method `Class.method(Spec)` returning JSONObject that `name` names. */
    static Method scenario(String name) throws ReflectiveOperationException {
        int dot = name.indexOf('.');
        if (dot <= 0) {
            throw new IllegalArgumentException("scenario must be Class.method: " + name);
        }
        Class<?> owner = Class.forName("rmq.conformance." + name.substring(0, dot));
        Method method = owner.getDeclaredMethod(name.substring(dot + 1), Spec.class);
        if (!Modifier.isStatic(method.getModifiers())
            || method.getReturnType() != JSONObject.class) {
            throw new IllegalArgumentException(name + " is not a static JSONObject method(Spec)");
        }
        method.setAccessible(true);
        return method;
    }

    public static void main(String[] args) {
        int status = 0;
        JSONObject result;
        try {
            if (args.length != 1) {
                throw new IllegalArgumentException("usage: Driver <Class.method>");
            }
            Method method = scenario(args[0]);
            Spec spec = new Spec(JSON.parseObject(readAll(System.in)));
            try {
                result = (JSONObject) method.invoke(null, spec);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        } catch (Throwable e) {
            StringWriter trace = new StringWriter();
            e.printStackTrace(new PrintWriter(trace));
            result = new JSONObject();
            result.put("error", e.toString());
            result.put("trace", trace.toString());
            status = 1;
        }
        System.out.println("RESULT " + JSON.toJSONString(result, SerializerFeature.SortField,
            SerializerFeature.MapSortField, SerializerFeature.DisableCircularReferenceDetect));
        System.out.flush();
        // Client threads (timers, netty) are not all daemons: leave without waiting for them.
        Runtime.getRuntime().halt(status);
    }

    private static String readAll(InputStream in) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        byte[] buffer = new byte[8192];
        int n;
        while ((n = in.read(buffer)) > 0) {
            out.write(buffer, 0, n);
        }
        return new String(out.toByteArray(), StandardCharsets.UTF_8);
    }
}
