// Kafka's own Java producer in transactional mode, driven by a small script on stdin, one
// command a line (producers are named so two can share one transactional.id):
//   new <name> <transactional.id>                 create the producer and initTransactions()
//   begin <name>                                  beginTransaction()
//   send <name> <topic> <partition> <value>       send one record and wait for its offset
//   offsets <name> <group> <topic> <partition> <offset>   sendOffsetsToTransaction(...)
//   commit <name> | abort <name> | close <name>
// Each command prints "ok <command> [offset]" or "error <command> <ExceptionClassName>".
import java.io.*;
import java.util.*;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;

public class TransactionalProducer {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        Map<String, KafkaProducer<byte[], byte[]>> producers = new HashMap<>();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, "UTF-8"));
        String line;
        while ((line = in.readLine()) != null) {
            String[] w = line.trim().split(" ");
            if (w.length < 2) continue;
            try {
                String extra = run(bootstrap, producers, w);
                System.out.println("ok " + w[0] + (extra.isEmpty() ? "" : " " + extra));
            } catch (Exception e) {
                Throwable cause = e.getCause() != null && e instanceof java.util.concurrent.ExecutionException ? e.getCause() : e;
                System.out.println("error " + w[0] + " " + cause.getClass().getSimpleName());
            }
            System.out.flush();
        }
        for (KafkaProducer<byte[], byte[]> p : producers.values()) p.close(java.time.Duration.ofSeconds(5));
    }

    static String run(String bootstrap, Map<String, KafkaProducer<byte[], byte[]>> producers, String[] w) throws Exception {
        switch (w[0]) {
            case "new": {
                Properties p = new Properties();
                p.put("bootstrap.servers", bootstrap);
                p.put("transactional.id", w[2]);
                p.put("transaction.timeout.ms", "60000");
                p.put("max.block.ms", "20000");
                p.put("request.timeout.ms", "10000");
                p.put("delivery.timeout.ms", "20000");
                p.put("key.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
                p.put("value.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
                KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p);
                producers.put(w[1], producer);
                producer.initTransactions();
                return "";
            }
            case "begin": producers.get(w[1]).beginTransaction(); return "";
            case "send": {
                ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(w[2], Integer.parseInt(w[3]), null, w[4].getBytes("UTF-8"));
                return Long.toString(producers.get(w[1]).send(r).get().offset());
            }
            case "offsets": {
                Map<TopicPartition, OffsetAndMetadata> offsets = Collections.singletonMap(
                    new TopicPartition(w[3], Integer.parseInt(w[4])), new OffsetAndMetadata(Long.parseLong(w[5])));
                producers.get(w[1]).sendOffsetsToTransaction(offsets, new ConsumerGroupMetadata(w[2]));
                return "";
            }
            case "commit": producers.get(w[1]).commitTransaction(); return "";
            case "abort": producers.get(w[1]).abortTransaction(); return "";
            case "close": producers.remove(w[1]).close(java.time.Duration.ofSeconds(5)); return "";
            default: throw new IllegalArgumentException(w[0]);
        }
    }
}
