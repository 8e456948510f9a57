"""Tools of the repository that are not the referee: the Kafka classpath's pom, the test kit."""
