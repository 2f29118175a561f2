// Kafka's own Java producer with its defaults for idempotence: enable.idempotence=true,
// acks=all, five requests in flight. Sends `count` records to partition 0 of `topic` in small
// batches and prints one line per acknowledged record: "<offset>".
import java.util.*;
import java.util.concurrent.Future;
import org.apache.kafka.clients.producer.*;

public class IdempotentProducer {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        int count = Integer.parseInt(args[2]);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("enable.idempotence", "true");
        p.put("acks", "all");
        p.put("linger.ms", "2");
        p.put("batch.size", "256");
        p.put("delivery.timeout.ms", "20000");
        p.put("request.timeout.ms", "10000");
        p.put("key.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        p.put("value.serializer", "org.apache.kafka.common.serialization.ByteArraySerializer");
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            for (int i = 0; i < count; i++) {
                byte[] value = ("java-" + i).getBytes("UTF-8");
                sent.add(producer.send(new ProducerRecord<>(topic, 0, null, value)));
            }
            producer.flush();
            for (Future<RecordMetadata> f : sent) {
                System.out.println(f.get().offset());
            }
        }
    }
}
