// Java's own Properties.store and Kafka's Uuid as oracles for meta.properties.
// stdin: key=value lines (in the order Kafka's MetaProperties.toProperties sets them), a blank
// line, then one base64 UUID a line. stdout: the Java version, then the file exactly as
// Properties.store(writer, "") writes it, a "---" line, then for each UUID the text
// Uuid.fromString(...).toString() gives back and its two longs.
import java.io.*;
import java.util.Properties;
import org.apache.kafka.common.Uuid;

public class MetaPropertiesOracle {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        Properties props = new Properties();
        for (String line; (line = in.readLine()) != null && !line.isEmpty(); ) {
            int eq = line.indexOf('=');
            props.setProperty(line.substring(0, eq), line.substring(eq + 1));
        }
        StringWriter file = new StringWriter();
        props.store(new PrintWriter(file), "");
        StringBuilder out = new StringBuilder();
        out.append(System.getProperty("java.specification.version")).append('\n');
        out.append(file).append("---\n");
        for (String line; (line = in.readLine()) != null; ) {
            Uuid uuid = Uuid.fromString(line.trim());
            out.append(uuid).append(' ').append(uuid.getMostSignificantBits())
               .append(' ').append(uuid.getLeastSignificantBits()).append('\n');
        }
        System.out.print(out);
    }
}
