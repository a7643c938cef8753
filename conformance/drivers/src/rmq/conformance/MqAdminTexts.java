// Apache's mqadmin run several times in one JVM, for the commands that only print text
// (`help <cmd>`, an unknown command): each run's stdout and stderr captured on their own.
// The same MQAdminStartup.main parses the same arguments and prints the same output as a run
// of its own; what changes is one JVM start for all of them instead of one each.  Runs that
// end in System.exit (`<cmd> -h`, a parse error) cannot share a JVM and are not for this.
package rmq.conformance;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.apache.rocketmq.tools.command.MQAdminStartup;

final class MqAdminTexts {
    private MqAdminTexts() {
    }

    /** "runs": a list of argument lists; out: "outputs", each run's {stdout, stderr}. */
    static JSONObject runs(Spec spec) throws Exception {
        JSONArray outputs = new JSONArray();
        PrintStream out = System.out;
        PrintStream err = System.err;
        for (Object run : spec.json.getJSONArray("runs")) {
            String[] args = ((JSONArray) run).toArray(new String[0]);
            ByteArrayOutputStream stdout = new ByteArrayOutputStream();
            ByteArrayOutputStream stderr = new ByteArrayOutputStream();
            System.setOut(new PrintStream(stdout, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(stderr, true, StandardCharsets.UTF_8));
            try {
                MQAdminStartup.main(args);
            } finally {
                System.out.flush();
                System.err.flush();
                System.setOut(out);
                System.setErr(err);
            }
            JSONObject output = new JSONObject(true);
            output.put("stdout", stdout.toString(StandardCharsets.UTF_8));
            output.put("stderr", stderr.toString(StandardCharsets.UTF_8));
            outputs.add(output);
        }
        JSONObject result = new JSONObject(true);
        result.put("outputs", outputs);
        return result;
    }
}
