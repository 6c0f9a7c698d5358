// Package liqo tests kubepact against Liqo's own code.
package liqo
