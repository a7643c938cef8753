// Compact records of received messages for scenarios with large bodies: like Records.record,
// but a body longer than 64 bytes is reported as its length and SHA-256 digest, so a megabyte
// body is compared exactly without putting it in the result.
package rmq.conformance;

import com.alibaba.fastjson.JSONArray;
import com.alibaba.fastjson.JSONObject;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import org.apache.rocketmq.common.message.MessageExt;

final class ProducerRecords {
    static final int INLINE_BODY = 64;

    private ProducerRecords() {
    }

    static String sha256(byte[] data) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(data));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Body length and digest (`body` inline when short). */
    static void putBody(JSONObject out, byte[] body) {
        out.put("bodyLength", body.length);
        if (body.length <= INLINE_BODY) {
            Records.putBody(out, body);
        } else {
            out.put("bodySha256", sha256(body));
        }
    }

    static JSONObject record(MessageExt message) {
        JSONObject out = Records.record(message);
        out.remove("body");
        out.remove("bodyBase64");
        putBody(out, message.getBody());
        return out;
    }

    /** Compact records sorted by keys, then body digest. */
    static JSONArray compact(List<MessageExt> messages) {
        List<JSONObject> records = new ArrayList<>();
        for (MessageExt message : messages) {
            records.add(record(message));
        }
        records.sort(Comparator.comparing((JSONObject r) -> String.valueOf(r.get("keys")))
            .thenComparing(r -> String.valueOf(r.get("body")))
            .thenComparing(r -> String.valueOf(r.get("bodySha256"))));
        return new JSONArray(new ArrayList<>(records));
    }
}
