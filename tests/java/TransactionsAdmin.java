// Kafka's own Admin client reading transactions, as kafka-transactions.sh does: prints
//   listing <transactionalId> <producerId> <state>            (Admin.listTransactions)
//   describe <state> <producerId> <epoch> <timeoutMs> <partitions>   (Admin.describeTransactions)
//   producer <producerId> <epoch> <lastSequence> <txnStartOffset or None>   (Admin.describeProducers)
import java.util.*;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.*;
import org.apache.kafka.common.TopicPartition;

public class TransactionsAdmin {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], transactionalId = args[1], topic = args[2];
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("request.timeout.ms", "10000");
        try (Admin admin = Admin.create(p)) {
            for (TransactionListing l : admin.listTransactions().all().get()) {
                System.out.println("listing " + l.transactionalId() + " " + l.producerId() + " " + l.state());
            }
            TransactionDescription d = admin.describeTransactions(List.of(transactionalId)).description(transactionalId).get();
            String partitions = d.topicPartitions().stream().map(TopicPartition::toString).sorted().collect(Collectors.joining(","));
            System.out.println("describe " + d.state() + " " + d.producerId() + " " + d.producerEpoch() + " "
                + d.transactionTimeoutMs() + " " + partitions);
            TopicPartition tp = new TopicPartition(topic, 0);
            for (ProducerState s : admin.describeProducers(List.of(tp)).partitionResult(tp).get().activeProducers()) {
                System.out.println("producer " + s.producerId() + " " + s.producerEpoch() + " " + s.lastSequence() + " "
                    + (s.currentTransactionStartOffset().isPresent() ? String.valueOf(s.currentTransactionStartOffset().getAsLong()) : "None"));
            }
        }
    }
}
