// Kafka's own partitioner as an oracle: reads "numPartitions" then one hex-encoded key a line
// from stdin and prints the partition BuiltInPartitioner.partitionForKey picks for each.
import java.io.*;
import org.apache.kafka.clients.producer.internals.BuiltInPartitioner;

public class KeyPartitions {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        int partitions = Integer.parseInt(in.readLine().trim());
        StringBuilder out = new StringBuilder();
        for (String line; (line = in.readLine()) != null; ) {
            byte[] key = new byte[line.length() / 2];
            for (int i = 0; i < key.length; i++)
                key[i] = (byte) Integer.parseInt(line.substring(2 * i, 2 * i + 2), 16);
            out.append(BuiltInPartitioner.partitionForKey(key, partitions)).append('\n');
        }
        System.out.print(out);
    }
}
