{{/*
kubepact.labels: the labels of every object the chart makes, for the
component named .name (the app.kubernetes.io/name config/ gives it): that
name and the version, as config/ labels them, and Helm's.
Call with (dict "name" NAME "root" $).
*/}}
{{- define "kubepact.labels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/part-of: kubepact
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- end }}

{{/*
kubepact.serviceAccountUser: the user name of the ServiceAccount .name in
the release's namespace, as the admission policies match it, split as
config/'s replacements leave it. Call with (dict "name" NAME "root" $).
*/}}
{{- define "kubepact.serviceAccountUser" -}}
'system:serviceaccount:' + '{{ .root.Release.Namespace }}' + ':' + '{{ .name }}'
{{- end }}

{{/*
kubepact.image: the controller's image reference, by digest when one is set.
*/}}
{{- define "kubepact.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end -}}
{{- end }}

{{/*
kubepact.priorityClassName: the pods' priority class, "" for none. The
schema refuses priorityClass.create with a priorityClassName.
*/}}
{{- define "kubepact.priorityClassName" -}}
{{- if .Values.priorityClass.create -}}
kubepact-controller
{{- else -}}
{{ .Values.priorityClassName }}
{{- end -}}
{{- end }}

{{/*
kubepact.podLabels: the pods' labels, the chart's and podLabels. podLabels
may not set one of the chart's: app.kubernetes.io/name is the selector of
the Deployment, the Service, the PodDisruptionBudget and the NetworkPolicy,
and the CLI finds the controller by it; the others are Helm's and the
version's.
*/}}
{{- define "kubepact.podLabels" -}}
{{- $own := include "kubepact.labels" (dict "name" "kubepact-controller" "root" .) | fromYaml -}}
{{- range $k, $v := .Values.podLabels -}}
{{- if hasKey $own $k -}}
{{- fail (printf "podLabels may not set %s: the chart sets it on the pods (app.kubernetes.io/name selects them for the Deployment, its Service, PodDisruptionBudget and NetworkPolicy, and for the kubepact CLI); choose another label key" $k) -}}
{{- end -}}
{{- end -}}
{{- include "kubepact.labels" (dict "name" "kubepact-controller" "root" .) }}
{{- with .Values.podLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
kubepact.validate: the rules between values that the schema cannot word
clearly (Helm prints a schema failure as its regular expression or as
"'allOf' failed"); each fails the render with what to set.
*/}}
{{- define "kubepact.validate" -}}
{{- with .Values.apiServerURL -}}
{{- if not (regexMatch "^https://[^\\s/?#]+(/[^\\s?#]*)?$" .) -}}
{{- fail (printf "apiServerURL %q is not an https URL: set it to the URL peers reach this API server at, https://HOST[:PORT][/PATH] (for example https://api.example.com:6443), with no query or fragment, or leave it empty to use kube-public/cluster-info's" .) -}}
{{- end -}}
{{- end -}}
{{- if and .Values.networkPolicy.enabled (not .Values.metrics.enabled) -}}
{{- fail "networkPolicy.enabled=true needs metrics.enabled=true: the NetworkPolicy admits only metrics scrapes to the controller's pods; set metrics.enabled=true, or leave networkPolicy.enabled=false" -}}
{{- end -}}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.enabled) -}}
{{- fail "metrics.serviceMonitor.enabled=true needs metrics.enabled=true: without the metrics endpoint there is nothing to scrape" -}}
{{- end -}}
{{- if and .Values.metrics.serviceMonitor.enabled (not .Values.metrics.certSecretName) (not .Values.metrics.serviceMonitor.insecureSkipVerify) -}}
{{- fail "metrics.serviceMonitor.enabled=true needs a way for Prometheus to trust the metrics certificate: set metrics.certSecretName to a Secret with tls.crt, tls.key and ca.crt (a cert-manager Certificate for kubepact-controller-metrics), or metrics.serviceMonitor.insecureSkipVerify=true to accept the controller's self-signed certificate" -}}
{{- end -}}
{{- end }}
