pipe.schedule @s placement @nowhere kind "gpipe" microbatches 1 {
}
