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
