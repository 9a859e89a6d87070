pipe.schedule @s placement @s kind "gpipe" microbatches 1 {
}
