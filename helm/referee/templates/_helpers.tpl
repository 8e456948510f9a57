{{/* Chart name, truncated to the 63 characters a DNS label allows. */}}
{{- define "referee.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name. */}}
{{- define "referee.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "referee.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's labels: every object of the chart carries them. */}}
{{- define "referee.selectorLabels" -}}
app.kubernetes.io/name: {{ include "referee.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
What selects the consumer pods (Deployment, Service, PDB, ServiceMonitor,
NetworkPolicy, anti-affinity). The component keeps the migration Job's pod
(component: migrate) out of all of them.
*/}}
{{- define "referee.consumerSelectorLabels" -}}
{{ include "referee.selectorLabels" . }}
app.kubernetes.io/component: referee
{{- end }}

{{- define "referee.labels" -}}
helm.sh/chart: {{ include "referee.chart" . }}
{{ include "referee.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: referee
{{- end }}

{{- define "referee.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "referee.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "referee.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ default .Chart.AppVersion .Values.image.tag }}
{{- end -}}
{{- end }}

{{/* Name of the Secret holding REFEREE_DATABASE_URL and the SASL credentials. */}}
{{- define "referee.secretName" -}}
{{- default (include "referee.fullname" .) .Values.existingSecret.name }}
{{- end }}

{{- define "referee.saslEnabled" -}}
{{- if has .Values.kafka.securityProtocol (list "SASL_PLAINTEXT" "SASL_SSL") }}true{{ end }}
{{- end }}

{{- define "referee.tlsEnabled" -}}
{{- if has .Values.kafka.securityProtocol (list "SSL" "SASL_SSL") }}true{{ end }}
{{- end }}

{{- define "referee.caFile" -}}
/etc/referee/kafka-ca/{{ .Values.kafka.ssl.caKey }}
{{- end }}

{{- define "referee.clientDir" -}}
/etc/referee/kafka-client
{{- end }}

{{/*
Checks of the values; included by every template so that a bad value fails
`helm template`, `helm lint` and `helm install` alike.
*/}}
{{- define "referee.validate" -}}
{{- $p := int .Values.kafka.partitions -}}
{{- if lt $p 1 -}}
{{- fail "kafka.partitions must be >= 1 (the partition count of the input topic)" -}}
{{- end -}}
{{- if and .Values.autoscaling.enabled .Values.keda.enabled -}}
{{- fail "autoscaling.enabled and keda.enabled are mutually exclusive (KEDA manages its own HPA)" -}}
{{- end -}}
{{- if gt (int .Values.replicaCount) $p -}}
{{- fail (printf "replicaCount (%d) exceeds kafka.partitions (%d): the extra consumers would sit idle" (int .Values.replicaCount) $p) -}}
{{- end -}}
{{- if and .Values.autoscaling.enabled (gt (int .Values.autoscaling.maxReplicas) $p) -}}
{{- fail (printf "autoscaling.maxReplicas (%d) exceeds kafka.partitions (%d)" (int .Values.autoscaling.maxReplicas) $p) -}}
{{- end -}}
{{- if and .Values.autoscaling.enabled (gt (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) -}}
{{- fail "autoscaling.minReplicas exceeds autoscaling.maxReplicas" -}}
{{- end -}}
{{- if and .Values.keda.enabled (gt (int .Values.keda.maxReplicaCount) $p) -}}
{{- fail (printf "keda.maxReplicaCount (%d) exceeds kafka.partitions (%d)" (int .Values.keda.maxReplicaCount) $p) -}}
{{- end -}}
{{- if and .Values.keda.enabled (gt (int .Values.keda.minReplicaCount) (int .Values.keda.maxReplicaCount)) -}}
{{- fail "keda.minReplicaCount exceeds keda.maxReplicaCount" -}}
{{- end -}}
{{- if not (has .Values.kafka.securityProtocol (list "PLAINTEXT" "SSL" "SASL_PLAINTEXT" "SASL_SSL")) -}}
{{- fail (printf "kafka.securityProtocol must be PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL, not %q" .Values.kafka.securityProtocol) -}}
{{- end -}}
{{- if include "referee.saslEnabled" . -}}
{{- if not (has .Values.kafka.sasl.mechanism (list "PLAIN" "SCRAM-SHA-256" "SCRAM-SHA-512")) -}}
{{- fail (printf "kafka.securityProtocol %s needs kafka.sasl.mechanism PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512" .Values.kafka.securityProtocol) -}}
{{- end -}}
{{- else if .Values.kafka.sasl.mechanism -}}
{{- fail "kafka.sasl.mechanism is set but kafka.securityProtocol is not SASL_PLAINTEXT or SASL_SSL" -}}
{{- end -}}
{{- if and .Values.kafka.ssl.caSecret (not (include "referee.tlsEnabled" .)) -}}
{{- fail "kafka.ssl.caSecret is set but kafka.securityProtocol is not SSL or SASL_SSL" -}}
{{- end -}}
{{- if and .Values.kafka.ssl.clientSecret (not (include "referee.tlsEnabled" .)) -}}
{{- fail "kafka.ssl.clientSecret is set but kafka.securityProtocol is not SSL or SASL_SSL" -}}
{{- end -}}
{{- if and .Values.kafka.ssl.keyPasswordKey (not .Values.kafka.ssl.clientSecret) -}}
{{- fail "kafka.ssl.keyPasswordKey is set but kafka.ssl.clientSecret is not" -}}
{{- end -}}
{{- if gt (mul 3 (int .Values.kafka.heartbeatIntervalMs)) (int .Values.kafka.sessionTimeoutMs) -}}
{{- fail (printf "kafka.heartbeatIntervalMs (%d) must be at most a third of kafka.sessionTimeoutMs (%d)" (int .Values.kafka.heartbeatIntervalMs) (int .Values.kafka.sessionTimeoutMs)) -}}
{{- end -}}
{{- if and (not .Values.existingSecret.name) (not .Values.database.url) -}}
{{- fail "set database.url (postgresql+asyncpg://USER:PASSWORD@HOST:5432/DB) or existingSecret.name" -}}
{{- end -}}
{{- $interval := include "referee.seconds" (dict "value" .Values.config.partitionInterval "name" "config.partitionInterval") | int64 -}}
{{- if or (lt $interval 60) (gt $interval 2678400) -}}
{{- fail (printf "config.partitionInterval %q must be from a minute to 31 days" (toString .Values.config.partitionInterval)) -}}
{{- end -}}
{{- if lt (int .Values.config.partitionsAhead) 1 -}}
{{- fail "config.partitionsAhead must be >= 1" -}}
{{- end -}}
{{- range $name, $value := dict "archive.retention" .Values.archive.retention "archive.keepPrints" .Values.archive.keepPrints "metrics.prometheusRule.archiveBehind.margin" .Values.metrics.prometheusRule.archiveBehind.margin -}}
{{- $s := include "referee.seconds" (dict "value" $value "name" $name) | int64 -}}
{{- if or (lt $s 60) (gt $s 315360000) -}}
{{- fail (printf "%s %q must be from a minute to 3650 days" $name (toString $value)) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.archive.enabled (not .Values.archive.url) -}}
{{- fail "archive.enabled needs archive.url (s3://bucket/prefix, or a directory on a volume of archive.extraVolumes)" -}}
{{- end -}}
{{- end }}

{{/*
Seconds of an interval as the settings read it (referee.store.partitions.parse_interval):
a whole number and a unit, "1 day", "6h", "15 minutes". Call with
(dict "value" VALUE "name" "the.value.name"); fails naming the value otherwise.
*/}}
{{- define "referee.seconds" -}}
{{- $text := lower (trim (toString .value)) -}}
{{- $units := dict "m" 60 "min" 60 "minute" 60 "minutes" 60 "h" 3600 "hour" 3600 "hours" 3600 "d" 86400 "day" 86400 "days" 86400 -}}
{{- $unit := regexReplaceAll "^[0-9]{1,6} ?" $text "" -}}
{{- if or (not (regexMatch "^[0-9]{1,6} ?[a-z]+$" $text)) (not (hasKey $units $unit)) -}}
{{- fail (printf "%s %q is not an interval: write a whole number and a unit, as \"1 day\", \"6h\" or \"15 minutes\"" .name (toString .value)) -}}
{{- end -}}
{{- mul (atoi (regexFind "^[0-9]+" $text)) (get $units $unit) -}}
{{- end }}

{{/*
Non-secret settings as a map of REFEREE_* name -> value. Rendered into the
ConfigMap (serve) and inline into the migration hook Job (which runs before
the ConfigMap exists). Every name must be a field of Settings.
*/}}
{{- define "referee.configEnv" -}}
REFEREE_DATA_DIR: {{ .Values.config.dataDir | quote }}
REFEREE_DB_POOL_SIZE: {{ .Values.database.poolSize | toString | quote }}
REFEREE_DB_MAX_OVERFLOW: {{ .Values.database.maxOverflow | toString | quote }}
REFEREE_DB_STATEMENT_TIMEOUT_SECONDS: {{ .Values.database.statementTimeoutSeconds | toString | quote }}
REFEREE_DB_LOCK_TIMEOUT_SECONDS: {{ .Values.database.lockTimeoutSeconds | toString | quote }}
REFEREE_DB_IDLE_IN_TRANSACTION_TIMEOUT_SECONDS: {{ .Values.database.idleInTransactionTimeoutSeconds | toString | quote }}
REFEREE_KAFKA_BOOTSTRAP_SERVERS: {{ .Values.kafka.bootstrapServers | quote }}
REFEREE_KAFKA_SECURITY_PROTOCOL: {{ .Values.kafka.securityProtocol | quote }}
{{- if include "referee.saslEnabled" . }}
REFEREE_KAFKA_SASL_MECHANISM: {{ .Values.kafka.sasl.mechanism | quote }}
{{- end }}
{{- if .Values.kafka.ssl.caSecret }}
REFEREE_KAFKA_SSL_CAFILE: {{ include "referee.caFile" . | quote }}
{{- end }}
{{- if .Values.kafka.ssl.clientSecret }}
REFEREE_KAFKA_SSL_CERTFILE: {{ printf "%s/%s" (include "referee.clientDir" .) .Values.kafka.ssl.certKey | quote }}
REFEREE_KAFKA_SSL_KEYFILE: {{ printf "%s/%s" (include "referee.clientDir" .) .Values.kafka.ssl.keyKey | quote }}
{{- end }}
REFEREE_INPUT_TOPIC: {{ .Values.kafka.topics.input | quote }}
REFEREE_VERDICT_TOPIC: {{ .Values.kafka.topics.verdicts | quote }}
REFEREE_DLQ_TOPIC: {{ .Values.kafka.topics.dlq | quote }}
REFEREE_GROUP_ID: {{ .Values.kafka.groupId | quote }}
{{- if .Values.kafka.relayTransactionalId }}
REFEREE_RELAY_TRANSACTIONAL_ID: {{ .Values.kafka.relayTransactionalId | quote }}
{{- end }}
REFEREE_KAFKA_SESSION_TIMEOUT_MS: {{ .Values.kafka.sessionTimeoutMs | toString | quote }}
REFEREE_KAFKA_HEARTBEAT_INTERVAL_MS: {{ .Values.kafka.heartbeatIntervalMs | toString | quote }}
REFEREE_BATCH_SIZE: {{ .Values.config.batchSize | toString | quote }}
REFEREE_BATCH_LINGER_MS: {{ .Values.config.batchLingerMs | toString | quote }}
REFEREE_MAX_EVENT_BYTES: {{ .Values.config.maxEventBytes | toString | quote }}
REFEREE_CACHE_GAMES: {{ .Values.config.cacheGames | toString | quote }}
REFEREE_HTTP_HOST: "0.0.0.0"
REFEREE_HTTP_PORT: {{ .Values.config.httpPort | toString | quote }}
REFEREE_HTTP_MAX_CLIENTS: {{ .Values.config.httpMaxClients | toString | quote }}
REFEREE_HTTP_REQUEST_SECONDS: {{ .Values.config.httpRequestSeconds | toString | quote }}
REFEREE_LOG_LEVEL: {{ .Values.config.logLevel | quote }}
REFEREE_READY_REQUIRES_PARTITION: {{ include "referee.readyRequiresPartition" . | quote }}
REFEREE_PIPELINE: {{ .Values.config.pipeline | toString | quote }}
REFEREE_LIVENESS_STALL_SECONDS: {{ .Values.config.livenessStallSeconds | toString | quote }}
{{- with .Values.config.buildRevision }}
REFEREE_BUILD_REVISION: {{ . | quote }}
{{- end }}
{{- with .Values.config.rulesRevision }}
REFEREE_RULES_REVISION: {{ . | toString | quote }}
{{- end }}
REFEREE_PARTITION_INTERVAL: {{ .Values.config.partitionInterval | quote }}
REFEREE_PARTITIONS_AHEAD: {{ .Values.config.partitionsAhead | toString | quote }}
{{- with .Values.archive.url }}
REFEREE_ARCHIVE_URL: {{ . | quote }}
{{- end }}
REFEREE_ARCHIVE_RETENTION: {{ .Values.archive.retention | quote }}
REFEREE_ARCHIVE_KEEP_PRINTS: {{ .Values.archive.keepPrints | quote }}
{{- end }}

{{/*
readiness.requirePartition: true/false as given; auto = false when the group's members
(one per pod) can outnumber the partitions (replicaCount >= kafka.partitions, or an
autoscaler), since a member without a partition is healthy but would never become ready.
*/}}
{{- define "referee.readyRequiresPartition" -}}
{{- $v := .Values.readiness.requirePartition -}}
{{- if eq (toString $v) "auto" -}}
{{- if or .Values.autoscaling.enabled .Values.keda.enabled (ge (int .Values.replicaCount) (int .Values.kafka.partitions)) -}}
false
{{- else -}}
true
{{- end -}}
{{- else if $v -}}
true
{{- else -}}
false
{{- end -}}
{{- end }}

{{/*
Hash of the Secret the pods read, for the checksum/secret annotation that rolls
them when it changes: the chart's own Secret from the values; an existingSecret
through `lookup` (empty under `helm template`/`--dry-run=client`, which cannot
reach the cluster: then rolloutToken is the fallback).
*/}}
{{- define "referee.secretChecksum" -}}
{{- if .Values.existingSecret.name -}}
{{- $secret := lookup "v1" "Secret" .Release.Namespace .Values.existingSecret.name -}}
{{- if and $secret $secret.data -}}
{{- $secret.data | toJson | sha256sum -}}
{{- end -}}
{{- else -}}
{{- include "referee.secretData" . | sha256sum -}}
{{- end -}}
{{- end }}

{{/* Affinity of the consumer pods: .Values.affinity, else the anti-affinity preset. */}}
{{- define "referee.affinity" -}}
{{- if .Values.affinity -}}
{{- toYaml .Values.affinity -}}
{{- else if eq .Values.podAntiAffinity "soft" -}}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: {{ .Values.podAntiAffinityTopologyKey }}
        labelSelector:
          matchLabels:
            {{- include "referee.consumerSelectorLabels" . | nindent 12 }}
{{- else if eq .Values.podAntiAffinity "hard" -}}
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - topologyKey: {{ .Values.podAntiAffinityTopologyKey }}
      labelSelector:
        matchLabels:
          {{- include "referee.consumerSelectorLabels" . | nindent 10 }}
{{- end -}}
{{- end }}

{{/*
env entries taken from a Secret. Call with (dict "root" $ "secretName" NAME).
*/}}
{{- define "referee.secretEnv" -}}
{{- $v := .root.Values -}}
- name: REFEREE_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ $v.existingSecret.keys.databaseUrl }}
{{- if include "referee.saslEnabled" .root }}
- name: REFEREE_KAFKA_SASL_USERNAME
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ $v.existingSecret.keys.kafkaSaslUsername }}
- name: REFEREE_KAFKA_SASL_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ $v.existingSecret.keys.kafkaSaslPassword }}
{{- end }}
{{- if $v.kafka.ssl.keyPasswordKey }}
- name: REFEREE_KAFKA_SSL_KEY_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $v.kafka.ssl.clientSecret }}
      key: {{ $v.kafka.ssl.keyPasswordKey }}
{{- end }}
{{- end }}

{{/* Secret data (chart-made Secrets only). */}}
{{- define "referee.secretData" -}}
{{ .Values.existingSecret.keys.databaseUrl }}: {{ .Values.database.url | b64enc | quote }}
{{- if include "referee.saslEnabled" . }}
{{ .Values.existingSecret.keys.kafkaSaslUsername }}: {{ .Values.kafka.sasl.username | b64enc | quote }}
{{ .Values.existingSecret.keys.kafkaSaslPassword }}: {{ .Values.kafka.sasl.password | b64enc | quote }}
{{- end }}
{{- end }}

{{/* Volumes shared by the Deployment and the migration Job. */}}
{{- define "referee.volumes" -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.tmpSizeLimit }}
{{- if .Values.kafka.ssl.caSecret }}
- name: kafka-ca
  secret:
    secretName: {{ .Values.kafka.ssl.caSecret }}
    items:
      - key: {{ .Values.kafka.ssl.caKey }}
        path: {{ .Values.kafka.ssl.caKey }}
{{- end }}
{{- if .Values.kafka.ssl.clientSecret }}
- name: kafka-client
  secret:
    secretName: {{ .Values.kafka.ssl.clientSecret }}
    items:
      - key: {{ .Values.kafka.ssl.certKey }}
        path: {{ .Values.kafka.ssl.certKey }}
      - key: {{ .Values.kafka.ssl.keyKey }}
        path: {{ .Values.kafka.ssl.keyKey }}
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "referee.volumeMounts" -}}
- name: tmp
  mountPath: /tmp
{{- if .Values.kafka.ssl.caSecret }}
- name: kafka-ca
  mountPath: /etc/referee/kafka-ca
  readOnly: true
{{- end }}
{{- if .Values.kafka.ssl.clientSecret }}
- name: kafka-client
  mountPath: {{ include "referee.clientDir" . }}
  readOnly: true
{{- end }}
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
A CronJob running one referee command on a schedule, after the release is installed: the
release's ConfigMap (envFrom) and Secret (env: the database URL the migration Job uses, and
the Kafka credentials, since every command checks every setting at start), the volumes of
the consumer pods (the Kafka CA and client files the settings point at), the restricted
securityContext, the chart's ServiceAccount (no token; annotate it for a cloud's IAM). Call with (dict "root" $ "component" "maintain"
"cfg" .Values.maintenance "args" (list "maintain") "env" YAML "volumes" LIST "mounts" LIST).
*/}}
{{- define "referee.cronJob" -}}
{{- $root := .root -}}
{{- $v := $root.Values -}}
{{- $cfg := .cfg -}}
apiVersion: batch/v1
kind: CronJob
metadata:
  name: {{ include "referee.fullname" $root | trunc 43 | trimSuffix "-" }}-{{ .component }}
  labels:
    {{- include "referee.labels" $root | nindent 4 }}
    app.kubernetes.io/component: {{ .component }}
spec:
  schedule: {{ $cfg.schedule | quote }}
  {{- with $cfg.timeZone }}
  timeZone: {{ . | quote }}
  {{- end }}
  suspend: {{ $cfg.suspend }}
  # never two runs at once: a run is long, and the next one finishes what it left
  concurrencyPolicy: Forbid
  startingDeadlineSeconds: {{ $cfg.startingDeadlineSeconds }}
  successfulJobsHistoryLimit: {{ $cfg.successfulJobsHistoryLimit }}
  failedJobsHistoryLimit: {{ $cfg.failedJobsHistoryLimit }}
  jobTemplate:
    metadata:
      labels:
        {{- include "referee.labels" $root | nindent 8 }}
        app.kubernetes.io/component: {{ .component }}
    spec:
      backoffLimit: {{ $cfg.backoffLimit }}
      activeDeadlineSeconds: {{ $cfg.activeDeadlineSeconds }}
      template:
        metadata:
          labels:
            {{- include "referee.labels" $root | nindent 12 }}
            app.kubernetes.io/component: {{ .component }}
        spec:
          restartPolicy: Never
          serviceAccountName: {{ include "referee.serviceAccountName" $root }}
          automountServiceAccountToken: false
          {{- with $v.imagePullSecrets }}
          imagePullSecrets:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          securityContext:
            {{- toYaml $v.podSecurityContext | nindent 12 }}
          containers:
            - name: {{ .component }}
              image: {{ include "referee.image" $root | quote }}
              imagePullPolicy: {{ $v.image.pullPolicy }}
              args: {{ toJson .args }}
              envFrom:
                - configMapRef:
                    name: {{ include "referee.fullname" $root }}
                {{- with $v.extraEnvFrom }}
                {{- toYaml . | nindent 16 }}
                {{- end }}
              env:
                {{- include "referee.secretEnv" (dict "root" $root "secretName" (include "referee.secretName" $root)) | nindent 16 }}
                {{- with .env }}
                {{- . | nindent 16 }}
                {{- end }}
                {{- with $v.extraEnv }}
                {{- toYaml . | nindent 16 }}
                {{- end }}
              resources:
                {{- toYaml $cfg.resources | nindent 16 }}
              securityContext:
                {{- toYaml $v.securityContext | nindent 16 }}
              volumeMounts:
                {{- include "referee.volumeMounts" $root | nindent 16 }}
                {{- with .mounts }}
                {{- toYaml . | nindent 16 }}
                {{- end }}
          volumes:
            {{- include "referee.volumes" $root | nindent 12 }}
            {{- with .volumes }}
            {{- toYaml . | nindent 12 }}
            {{- end }}
          {{- with $v.nodeSelector }}
          nodeSelector:
            {{- toYaml . | nindent 12 }}
          {{- end }}
          {{- with $v.tolerations }}
          tolerations:
            {{- toYaml . | nindent 12 }}
          {{- end }}
{{- end }}
