// One Kafka Java client KafkaConsumer with a chosen isolation.level reading partition 0 of a
// topic from the beginning: it polls until `expected` records arrived and then nothing more for
// a second (or 20 s passed), and prints "value <utf-8>" per record, then "end <offset>" as
// endOffsets() (ListOffsets latest at that isolation level) answers.
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.TopicPartition;

public class ReadCommittedConsumer {
    public static void main(String[] args) {
        String bootstrap = args[0], topic = args[1], isolation = args[2];
        int expected = Integer.parseInt(args[3]);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("isolation.level", isolation);
        p.put("enable.auto.commit", "false");
        p.put("key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        p.put("value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer");
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(p)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            int read = 0;
            long deadline = System.currentTimeMillis() + 20_000, idleSince = System.currentTimeMillis();
            while (System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(100))) {
                    System.out.println("value " + new String(r.value(), StandardCharsets.UTF_8));
                    read++;
                    idleSince = System.currentTimeMillis();
                }
                if (read >= expected && System.currentTimeMillis() - idleSince > 1_000) break;
            }
            System.out.println("end " + c.endOffsets(List.of(tp)).get(tp));
        }
    }
}
